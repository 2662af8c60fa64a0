/* Darwin personality: stand-in for the part of macOS's <mach/message.h> that libproc's
 * callers use: audit_token_t, eight unsigned ints (SDK mach/message.h; val[5] is the pid,
 * val[7] the pid version, bsm/libbsm.h audit_token_to_pid/audit_token_to_pidversion). */
#ifndef SLURM_SHIM_EMULATE_MACH_MESSAGE_H
#define SLURM_SHIM_EMULATE_MACH_MESSAGE_H

typedef struct {
	unsigned int val[8];
} audit_token_t;

#endif

/* Darwin personality: stand-in for macOS's <machine/endian.h> (BYTE_ORDER, LITTLE_ENDIAN,
 * BIG_ENDIAN), which Slurm's hash/k12 brg_endian.h includes on __APPLE__; glibc has them
 * in <endian.h>. */
#ifndef SLURM_SHIM_EMULATE_MACHINE_ENDIAN_H
#define SLURM_SHIM_EMULATE_MACHINE_ENDIAN_H
#include <endian.h>
#endif

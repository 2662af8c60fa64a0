/* lint fixture (not Slurm code): a scanned plugin directory */
#define PROC_DIR "/proc" /* finding: in a #define body */

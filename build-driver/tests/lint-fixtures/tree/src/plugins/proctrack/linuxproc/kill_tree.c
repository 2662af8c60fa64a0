/* lint fixture (not Slurm code): an excluded plugin directory */
static const char *p = "/proc"; /* not scanned: proctrack/linuxproc is excluded */

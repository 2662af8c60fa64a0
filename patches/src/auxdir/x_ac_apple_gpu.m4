##*****************************************************************************
#  AUTHOR:
#    slurm-on-mac developers
#
#  SYNOPSIS:
#    X_AC_APPLE_GPU
#
#  DESCRIPTION:
#    Whether gpu/apple (gres.conf AutoDetect=apple: Apple GPUs through IOKit)
#    can be built: on macOS, a program calling IOServiceMatching() and
#    CFRelease() must link with -framework IOKit -framework CoreFoundation.
#    Sets APPLE_GPU_LIBS and the automake conditional BUILD_APPLE_GPU. Other
#    systems never build it. The answer is cached in x_ac_cv_apple_gpu_libs:
#    "no", "none required" (the functions link without extra flags) or the
#    link flags.
##*****************************************************************************

AC_DEFUN([X_AC_APPLE_GPU],
[
  AC_CACHE_CHECK([for the IOKit and CoreFoundation frameworks (gpu/apple)],
    [x_ac_cv_apple_gpu_libs],
    [x_ac_cv_apple_gpu_libs=no
     case "$host_os" in
     darwin*)
       x_ac_apple_gpu_save_LIBS="$LIBS"
       LIBS="-framework IOKit -framework CoreFoundation $LIBS"
       AC_LINK_IFELSE(
         [AC_LANG_PROGRAM([[#include <IOKit/IOKitLib.h>]],
                          [[CFRelease(IOServiceMatching("AGXAccelerator"));]])],
         [x_ac_cv_apple_gpu_libs="-framework IOKit -framework CoreFoundation"])
       LIBS="$x_ac_apple_gpu_save_LIBS"
       ;;
     esac])
  case "$x_ac_cv_apple_gpu_libs" in
    no | "none required") APPLE_GPU_LIBS= ;;
    *) APPLE_GPU_LIBS="$x_ac_cv_apple_gpu_libs" ;;
  esac
  AC_SUBST(APPLE_GPU_LIBS)
  AM_CONDITIONAL(BUILD_APPLE_GPU, test "$x_ac_cv_apple_gpu_libs" != no)
])

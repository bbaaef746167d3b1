/*
 * devzfs.c: an LD_PRELOAD shim for OpenZFS's userspace tools (zhack, ztest) in tests.
 *
 * libzpool runs the whole DMU in userspace, but libzfs_core_init() still opens
 * "/dev/zfs" at start-up and gives up when it cannot. There is no kernel module here, so
 * every open of "/dev/zfs" is turned into an open of "/dev/null"; no ioctl is ever issued
 * on it by the tools the tests run (zhack works on pools through libzpool's own spa).
 * Everything else passes through unchanged. Zetta's own code, built by
 * crates/zetta/tests/openzfs_zhack.rs with `cc -shared -fPIC`.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

static const char *
devzfs_map(const char *path)
{
	return (path != NULL && strcmp(path, "/dev/zfs") == 0) ? "/dev/null" : path;
}

static mode_t
devzfs_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

#define	DEVZFS_OPEN(name)						\
int									\
name(const char *path, int flags, ...)					\
{									\
	va_list ap;							\
	va_start(ap, flags);						\
	mode_t mode = devzfs_mode(flags, ap);				\
	va_end(ap);							\
	open_fn real = (open_fn)dlsym(RTLD_NEXT, #name);		\
	return (real(devzfs_map(path), flags, mode));			\
}

#define	DEVZFS_OPENAT(name)						\
int									\
name(int dirfd, const char *path, int flags, ...)			\
{									\
	va_list ap;							\
	va_start(ap, flags);						\
	mode_t mode = devzfs_mode(flags, ap);				\
	va_end(ap);							\
	openat_fn real = (openat_fn)dlsym(RTLD_NEXT, #name);		\
	return (real(dirfd, devzfs_map(path), flags, mode));		\
}

DEVZFS_OPEN(open)
DEVZFS_OPEN(open64)
DEVZFS_OPENAT(openat)
DEVZFS_OPENAT(openat64)

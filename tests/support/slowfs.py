#!/usr/bin/env python3
"""A slow disk: a passthrough FUSE file system over ROOT that sleeps before every write
and every fsync (test support for tests/results_disk.rs, not product; mfusepy over
libfuse 3). Runs in the foreground until unmounted (fusermount3 -u MOUNTPOINT).

    slowfs.py ROOT MOUNTPOINT WRITE_DELAY_S FSYNC_DELAY_S
"""
import errno
import os
import sys
import time

import mfusepy as fuse


class Slow(fuse.Operations):
    use_ns = True

    def __init__(self, root, write_delay, fsync_delay):
        self.root = os.path.realpath(root)
        self.write_delay = write_delay
        self.fsync_delay = fsync_delay

    def _p(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def access(self, path, amode):
        if not os.access(self._p(path), amode):
            raise fuse.FuseOSError(errno.EACCES)

    def chmod(self, path, mode):
        os.chmod(self._p(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._p(path), uid, gid)

    def create(self, path, mode, fi=None):
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        time.sleep(self.fsync_delay)
        os.fsync(fh)
        return 0

    def fsyncdir(self, path, datasync, fh):
        time.sleep(self.fsync_delay)
        return 0

    def getattr(self, path, fh=None):
        st = os.lstat(self._p(path))
        return {k: getattr(st, k) for k in (
            "st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size",
            "st_uid", "st_blocks")}

    def mkdir(self, path, mode):
        os.mkdir(self._p(path), mode)

    def open(self, path, flags):
        return os.open(self._p(path), flags)

    def opendir(self, path):
        return 0

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._p(path))

    def readlink(self, path):
        return os.readlink(self._p(path))

    def release(self, path, fh):
        os.close(fh)
        return 0

    def releasedir(self, path, fh):
        return 0

    def rename(self, old, new):
        os.rename(self._p(old), self._p(new))

    def rmdir(self, path):
        os.rmdir(self._p(path))

    def statfs(self, path):
        st = os.statvfs(self._p(path))
        return {k: getattr(st, k) for k in (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax")}

    def truncate(self, path, length, fh=None):
        if fh is None:
            os.truncate(self._p(path), length)
        else:
            os.ftruncate(fh, length)

    def unlink(self, path):
        os.unlink(self._p(path))

    def utimens(self, path, times=None):
        os.utime(self._p(path), ns=times)

    def write(self, path, data, offset, fh):
        time.sleep(self.write_delay)
        return os.pwrite(fh, data, offset)


def main():
    root, mount, wd, fd = sys.argv[1:5]
    fuse.FUSE(Slow(root, float(wd), float(fd)), mount, foreground=True, nothreads=False)


if __name__ == "__main__":
    main()

package org.tent4j.transport.nvmeof;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;

/**
 * A registered file opened for I/O. With io_uring: a buffered descriptor always, and an {@code O_DIRECT} one when the
 * file system allows it. Without: a {@link FileChannel}. Reference counted, because an I/O thread holds the
 * descriptor numbers until its operations complete: the descriptors close only once the last operation has, so a
 * reused descriptor number can never receive another file's I/O.
 */
final class OpenFile {
    final Path path;
    /** Base of the file's range in its segment's address space. */
    final long base;
    final long length;
    final boolean writable;
    final int bufferedFd;
    final int directFd;
    /** Why there is no O_DIRECT descriptor ({@code null} when there is one or io_uring is not used). */
    final String directRefused;
    final FileChannel channel;
    final long dev;
    final long ino;
    private final Object fileKey;
    private int refs = 1;
    private boolean closing;
    /** Per I/O thread: the loop in which it last checked the file, and what it found (see {@link RingWorker}). */
    final long[] checkedLoop;
    final byte[] checkedState;

    private OpenFile(Path path, long base, long length, boolean writable, int bufferedFd, int directFd, String directRefused,
                     FileChannel channel, long dev, long ino, Object fileKey, int threads) {
        this.path = path;
        this.base = base;
        this.length = length;
        this.writable = writable;
        this.bufferedFd = bufferedFd;
        this.directFd = directFd;
        this.directRefused = directRefused;
        this.channel = channel;
        this.dev = dev;
        this.ino = ino;
        this.fileKey = fileKey;
        this.checkedLoop = new long[threads];
        java.util.Arrays.fill(checkedLoop, -1);
        this.checkedState = new byte[threads];
    }

    /** Opens for io_uring: buffered read-write (read-only when writing is refused), plus O_DIRECT when allowed. */
    static OpenFile openNative(Path path, long base, long length, boolean direct, int threads) throws IOException {
        int fd;
        boolean writable = true;
        try {
            fd = LinuxIo.open(path, LinuxIo.O_RDWR | LinuxIo.O_CLOEXEC);
        } catch (IOException rw) {
            fd = LinuxIo.open(path, LinuxIo.O_RDONLY | LinuxIo.O_CLOEXEC);
            writable = false;
        }
        int directFd = -1;
        String refused = null;
        try {
            LinuxIo.Stat st = LinuxIo.fstat(fd, path);
            if (direct) {
                try {
                    directFd = LinuxIo.open(path, (writable ? LinuxIo.O_RDWR : LinuxIo.O_RDONLY) | LinuxIo.O_CLOEXEC | LinuxIo.O_DIRECT);
                } catch (IOException e) {
                    // tmpfs and some FUSE file systems refuse O_DIRECT with EINVAL: buffered I/O still works
                    refused = e.getMessage();
                }
            } else {
                refused = "transports.nvmeof.direct is false";
            }
            return new OpenFile(path, base, length, writable, fd, directFd, refused, null, st.dev(), st.ino(), null, threads);
        } catch (IOException | RuntimeException e) {
            LinuxIo.close(fd);
            LinuxIo.close(directFd);
            throw e;
        }
    }

    /** Opens for positional {@link FileChannel} I/O. */
    static OpenFile openChannel(Path path, long base, long length, int threads) throws IOException {
        FileChannel c;
        boolean writable = true;
        try {
            c = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (IOException | UnsupportedOperationException rw) {
            c = FileChannel.open(path, StandardOpenOption.READ);
            writable = false;
        }
        Object key = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
        long dev = -1;
        long ino = -1;
        try {
            dev = ((Number) Files.getAttribute(path, "unix:dev")).longValue();
            ino = ((Number) Files.getAttribute(path, "unix:ino")).longValue();
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            // not a Unix file system view: identity is checked through the file key alone
        }
        return new OpenFile(path, base, length, writable, -1, -1, null, c, dev, ino, key, threads);
    }

    /** For FileChannel I/O: whether the path still names the file that was opened. */
    boolean stillLinked() {
        try {
            return Objects.equals(Files.readAttributes(path, BasicFileAttributes.class).fileKey(), fileKey);
        } catch (IOException e) {
            return false;
        }
    }

    /** Takes a reference for one operation; {@code false} once the file is being closed. */
    synchronized boolean acquire() {
        if (closing) {
            return false;
        }
        refs++;
        return true;
    }

    void release() {
        boolean last;
        synchronized (this) {
            last = --refs == 0;
            if (last) {
                notifyAll();
            }
        }
        if (last) {
            closeNow();
        }
    }

    /** Stops new operations, drops the opening reference, and waits (bounded) until running ones are done. */
    void close(long waitMillis) {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
        }
        release();
        long deadline = System.currentTimeMillis() + waitMillis;
        synchronized (this) {
            while (refs > 0) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    return;
                }
                try {
                    wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private void closeNow() {
        LinuxIo.close(directFd);
        LinuxIo.close(bufferedFd);
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing was written through it after the last operation completed
            }
        }
    }

    @Override
    public String toString() {
        return path.toString();
    }
}

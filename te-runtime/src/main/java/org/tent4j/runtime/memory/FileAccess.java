package org.tent4j.runtime.memory;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalFile;
import org.tent4j.spi.LocalFiles;

/**
 * The engine's files as network transports see them (remote file segments, issue 12): a peer's request for a file
 * range is checked against {@link FileSegments} and served with positional {@link FileChannel} I/O, so a pool of
 * NVMe on other hosts is reachable without kernel NVMe-oF and without the network transport naming a file transport.
 * One channel per file, opened on first use (read-only for a READ_ONLY file) and closed when the file is
 * unregistered; I/O racing the close fails with the file named, never touches another file.
 */
public final class FileAccess implements LocalFiles {
    private static final Logger log = LoggerFactory.getLogger(FileAccess.class);

    private final FileSegments files;
    private final ConcurrentHashMap<LocalFile, FileChannel> channels = new ConcurrentHashMap<>();

    FileAccess(FileSegments files) {
        this.files = files;
    }

    @Override
    public LocalFile find(long address, long length) {
        return files.find(address, length);
    }

    @Override
    public void read(LocalFile file, long address, MemorySegment into) {
        ByteBuffer b = into.asByteBuffer();
        long offset = address - file.address();
        long at = offset;
        try {
            FileChannel c = channel(file);
            while (b.hasRemaining()) {
                int n = c.read(b, at);
                if (n < 0) {
                    throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "file " + file.path() + " at offset " + offset
                            + ", length " + into.byteSize() + ": the file now ends at " + at + ", before the "
                            + file.length() + " bytes registered (truncated?)");
                }
                at += n;
            }
        } catch (IOException e) {
            throw failed("read", file, offset, into.byteSize(), e);
        }
    }

    @Override
    public void write(LocalFile file, long address, MemorySegment from) {
        ByteBuffer b = from.asByteBuffer();
        long offset = address - file.address();
        long at = offset;
        try {
            FileChannel c = channel(file);
            while (b.hasRemaining()) {
                at += c.write(b, at);
            }
        } catch (IOException e) {
            throw failed("write", file, offset, from.byteSize(), e);
        }
    }

    private FileChannel channel(LocalFile file) throws IOException {
        FileChannel c = channels.get(file);
        if (c != null) {
            return c;
        }
        try {
            return channels.computeIfAbsent(file, f -> {
                if (files.find(f.address(), 1) != f) {
                    throw new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, "file " + f.path() + " is no longer registered");
                }
                try {
                    return f.permission() == Permission.READ_WRITE
                            ? FileChannel.open(f.path(), StandardOpenOption.READ, StandardOpenOption.WRITE)
                            : FileChannel.open(f.path(), StandardOpenOption.READ);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
        } catch (java.io.UncheckedIOException e) {
            throw e.getCause();
        }
    }

    /** The file is unregistered: its channel closes, so no peer request touches it afterwards. */
    void close(LocalFile file) {
        FileChannel c = channels.remove(file);
        if (c != null) {
            try {
                c.close();
            } catch (IOException e) {
                log.warn("closing {} failed: {}", file, e.toString());
            }
        }
    }

    public void closeAll() {
        for (LocalFile f : channels.keySet()) {
            close(f);
        }
    }

    private static TransferException failed(String op, LocalFile file, long offset, long length, IOException e) {
        if (e instanceof ClosedChannelException) {
            return new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, op + " of file " + file.path() + " at offset "
                    + offset + ", length " + length + ": the file was unregistered meanwhile", e);
        }
        return new TransferException(ErrorCode.INTERNAL, op + " of file " + file.path() + " at offset " + offset
                + ", length " + length + " failed: " + e, e);
    }
}

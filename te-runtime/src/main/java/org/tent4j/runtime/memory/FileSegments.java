package org.tent4j.runtime.memory;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredFile;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.spi.BufferDescriptor;

/**
 * The engine's registered files (file segments). Each file gets its own range of the segment's address space at or
 * above {@link #BASE}, far above any user-space memory address (x86-64 and aarch64 user space ends below 2^57), so
 * memory and files share one segment and one lookup ({@code SegmentDescriptor.findBuffer}). Bases are handed out
 * upwards and never reused, so a peer holding a stale descriptor can never reach a different file at an old address.
 *
 * <p>Files are kept out of {@code Registrations} (the transports' {@code LocalMemory}): a transport that moves memory
 * checks peer accesses there and so never mistakes a file's range for memory it could touch.
 */
public final class FileSegments {
    private static final Logger log = LoggerFactory.getLogger(FileSegments.class);
    static final long BASE = org.tent4j.spi.LocalFiles.FILE_SPACE;
    static final long LIMIT = 1L << 62;
    /** Each file starts on a GiB boundary after a GiB gap, so an off-by-a-little address never lands in the next file. */
    private static final long SPACING = 1L << 30;
    private static final int S_IFMT = 0170000;
    private static final int S_IFBLK = 0060000;

    private volatile RegisteredFileBuffer[] files = new RegisteredFileBuffer[0];
    /** Peers' requests for these files, served by network transports (remote file segments). */
    private final FileAccess access = new FileAccess(this);
    private long next = BASE;
    private int ids;

    /** Validates, creates or extends the file, and registers it with every transport that serves files. */
    public synchronized RegisteredFileBuffer register(Path path, long size, Permission permission, TransportSlot[] transports) {
        if (path == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file path must not be null");
        }
        Path p = path.toAbsolutePath().normalize();
        if (permission == null || permission == Permission.LOCAL_ONLY) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + ": permission must be READ_ONLY or READ_WRITE"
                    + " (a file is only ever the target of requests, so LOCAL_ONLY would make it unreachable), got " + permission);
        }
        if (size < 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + ": size must be >= 0, got " + size);
        }
        for (RegisteredFileBuffer f : files) {
            if (f.path().equals(p)) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + " is already registered as " + f);
            }
        }
        long length = prepare(p, size);
        long base = next;
        long span = ((length + SPACING - 1) / SPACING + 1) * SPACING;
        if (LIMIT - base < span) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + " (" + length
                    + " bytes): the segment's file address space is used up");
        }
        RegisteredFileBuffer f = new RegisteredFileBuffer(++ids, p, base, length, permission);
        Map<String, Map<String, String>> attrs = new LinkedHashMap<>();
        long mask = 0;
        List<String> why = new ArrayList<>();
        for (TransportSlot s : transports) {
            try {
                Optional<Map<String, String>> a = s.transport().registerFile(f);
                if (a.isPresent()) {
                    mask |= 1L << s.index();
                    attrs.put(s.id(), a.get());
                }
            } catch (RuntimeException e) {
                log.warn("transport '{}' could not register {}: {}", s.id(), f, e.getMessage());
                why.add(s.id() + ": " + e.getMessage());
            }
        }
        if (mask == 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + ": no running transport serves files"
                    + (why.isEmpty() ? " (enable one, e.g. transports.enabled=...,nvmeof)" : " (" + String.join("; ", why) + ")"));
        }
        f.registered(mask, Map.copyOf(attrs));
        next = base + span;
        RegisteredFileBuffer[] cur = files;
        RegisteredFileBuffer[] grown = Arrays.copyOf(cur, cur.length + 1);
        grown[cur.length] = f;
        files = grown;
        return f;
    }

    /** The registered length of {@code p}: created or extended to {@code size} when needed, else its current size. */
    private static long prepare(Path p, long size) {
        try {
            if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS) && !Files.exists(p)) {
                if (size == 0) {
                    throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + " does not exist; give a size > 0 to create it");
                }
                try (FileChannel c = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                    assert c.isOpen();
                }
            }
            if (Files.isDirectory(p)) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + " is a directory");
            }
            boolean regular = Files.isRegularFile(p);
            if (!regular && !isBlockDevice(p)) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + " is neither a regular file nor a block device");
            }
            long current;
            try (FileChannel c = FileChannel.open(p, StandardOpenOption.READ)) {
                current = c.size();
            }
            if (size == 0) {
                if (current == 0) {
                    throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + " is empty; give a size > 0 to extend it");
                }
                return current;
            }
            if (current < size) {
                if (!regular) {
                    throw new TransferException(ErrorCode.INVALID_ARGUMENT, "block device " + p + " holds " + current
                            + " bytes, fewer than the " + size + " asked for");
                }
                try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "rw")) {
                    raf.setLength(size); // sparse: no blocks are written
                }
            }
            return size;
        } catch (IOException | SecurityException e) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + p + " cannot be registered: " + e, e);
        }
    }

    private static boolean isBlockDevice(Path p) throws IOException {
        try {
            Object mode = Files.getAttribute(p, "unix:mode");
            return mode instanceof Integer m && (m & S_IFMT) == S_IFBLK;
        } catch (UnsupportedOperationException e) {
            return false;
        }
    }

    /** Removes a registration and tells the transports that served it. */
    public void unregister(RegisteredFile file, String engine, TransportSlot[] transports) {
        RegisteredFileBuffer f;
        synchronized (this) {
            RegisteredFileBuffer[] cur = files;
            int i = file instanceof RegisteredFileBuffer b ? Arrays.asList(cur).indexOf(b) : -1;
            if (i < 0) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + file + " is not registered with engine '" + engine + "'");
            }
            f = cur[i];
            RegisteredFileBuffer[] shrunk = new RegisteredFileBuffer[cur.length - 1];
            System.arraycopy(cur, 0, shrunk, 0, i);
            System.arraycopy(cur, i + 1, shrunk, i, cur.length - i - 1);
            files = shrunk;
        }
        access.close(f);
        for (TransportSlot s : transports) {
            if (f.registeredWith(s.index())) {
                try {
                    s.transport().unregisterFile(f);
                } catch (RuntimeException e) {
                    log.warn("transport '{}' failed to unregister {}: {}", s.id(), f, e.getMessage());
                }
            }
        }
    }

    /** The registered file holding {@code [address, address + length)}, or {@code null}. */
    RegisteredFileBuffer find(long address, long length) {
        if (address < BASE || length < 0) {
            return null;
        }
        for (RegisteredFileBuffer f : files) {
            if (f.contains(address, length)) {
                return f;
            }
        }
        return null;
    }

    /** What transports get as {@code TransportContext.localFiles()}. */
    public FileAccess access() {
        return access;
    }

    /** Adds the files to a descriptor's buffers, at location {@code file:0}. */
    void describe(List<BufferDescriptor> buffers, TransportSlot[] transports) {
        for (RegisteredFileBuffer f : files) {
            List<String> ts = new ArrayList<>();
            for (TransportSlot s : transports) {
                if (f.registeredWith(s.index())) {
                    ts.add(s.id());
                }
            }
            buffers.add(BufferDescriptor.builder().address(f.address()).length(f.length()).location(Location.FILE)
                    .permission(f.permission()).transports(ts).attributes(f.transportAttributes()).build());
        }
    }
}

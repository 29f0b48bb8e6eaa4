package org.tent4j.store.client;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.UUID;
import java.util.zip.CRC32C;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredFile;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.Tier;

/**
 * This node's disk segment: a file in the operator's directory, registered with the engine as a file segment (the
 * nvmeof transport serves it to this engine through io_uring, O_DIRECT where the file system allows; tcp serves it to
 * other nodes) and mounted at the master as a DISK segment. The engine moves every byte; this class creates the file,
 * checks what the master hands it, and makes written bytes durable ({@link #sync}: fdatasync).
 */
final class DiskSegment implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DiskSegment.class);
    /** The smallest disk segment: one block of the master's 4 KiB disk alignment. */
    static final long MIN_BYTES = 4096;

    final SegmentSpec spec;
    final RegisteredFile file;
    private final TransferEngine engine;
    private final FileChannel channel;

    private DiskSegment(SegmentSpec spec, RegisteredFile file, TransferEngine engine, FileChannel channel) {
        this.spec = spec;
        this.file = file;
        this.engine = engine;
        this.channel = channel;
    }

    /**
     * Creates a fresh file of {@code size} bytes in {@code dir} and registers it with the engine. Refused with
     * INVALID_PARAMS naming the directory when it is missing, not a directory or not writable, when the size is not
     * positive, or when the engine cannot serve files.
     */
    static DiskSegment open(TransferEngine engine, Path dir, long size, String host) {
        check(dir, size);
        String id = UUID.randomUUID().toString();
        Path path = dir.toAbsolutePath().normalize().resolve("tent4j-store-" + id + ".disk");
        FileChannel channel;
        try {
            channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (IOException | RuntimeException e) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk dir " + dir + " is not writable: cannot create "
                    + path.getFileName() + ": " + e, e);
        }
        try {
            String noDirect = probeDirect(path);
            if (noDirect != null) {
                LOG.warn("disk segment {}: the file system refuses O_DIRECT ({}); offloads and disk reads go through "
                        + "the page cache (durability still by fdatasync)", path, noDirect);
            }
            RegisteredFile f = engine.registerFile(path, size, Permission.READ_WRITE);
            SegmentSpec spec = new SegmentSpec(id, engine.segmentName(), host, f.address(), f.length(), Tier.DISK,
                    path.toString());
            return new DiskSegment(spec, f, engine, channel);
        } catch (TransferException | StoreException e) {
            closeAndDelete(channel, path);
            throw new StoreException(StoreError.INVALID_PARAMS, "disk segment in " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Refuses (INVALID_PARAMS naming the directory) a size under 4 KiB and a directory that is missing or not writable. */
    static void check(Path dir, long size) {
        if (size < MIN_BYTES) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk segment in " + dir + ": size must be at least "
                    + MIN_BYTES + " bytes, got " + size);
        }
        if (!Files.isDirectory(dir)) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk dir " + dir + " is not a directory");
        }
        if (!Files.isWritable(dir)) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk dir " + dir + " is not writable");
        }
    }

    /** Why O_DIRECT cannot be used on the file, or null if it can. */
    private static String probeDirect(Path path) {
        try (FileChannel ignored = FileChannel.open(path, StandardOpenOption.READ,
                com.sun.nio.file.ExtendedOpenOption.DIRECT)) {
            return null;
        } catch (IOException | RuntimeException e) {
            return e.toString();
        }
    }

    /** Whether {@code [address, address + length)} lies in this segment's file. */
    boolean holds(long address, long length) {
        return length >= 0 && address >= file.address() && address - file.address() <= file.length() - length;
    }

    /** Makes every byte written to the file so far durable (fdatasync: data and the metadata needed to read it). */
    void sync() throws IOException {
        channel.force(false);
    }

    static long crc32c(MemorySegment bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes.asByteBuffer());
        return crc.getValue();
    }

    /** Unregisters the file and deletes it: its objects went with the segment's unmount. */
    @Override
    public void close() {
        try {
            engine.unregisterFile(file);
        } catch (RuntimeException e) {
            LOG.warn("unregistering disk segment file {} failed: {}", file.path(), e.getMessage());
        }
        closeAndDelete(channel, file.path());
    }

    private static void closeAndDelete(FileChannel channel, Path path) {
        try {
            channel.close();
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.warn("deleting disk segment file {} failed: {}", path, e.getMessage());
        }
    }
}

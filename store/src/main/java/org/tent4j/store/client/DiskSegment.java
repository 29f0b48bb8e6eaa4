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
 * other nodes) and mounted at the master as a DISK segment. The engine moves every byte; this class creates or reopens
 * the file, checks what the master hands it, makes written bytes durable ({@link #sync}: fdatasync) and keeps the
 * {@link DiskIndex} of what it holds, so the file outlives the node.
 */
final class DiskSegment implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DiskSegment.class);
    /** The smallest disk segment: one block of the master's 4 KiB disk alignment. */
    static final long MIN_BYTES = 4096;
    /** The disk file's name in the operator's directory (its index: {@code FILE + ".index"}). */
    static final String FILE = "tent4j-store.disk";

    final SegmentSpec spec;
    final RegisteredFile file;
    private final TransferEngine engine;
    private final FileChannel channel;
    /** What the file holds, durably: appended after each batch of offloads, read back on a restart. */
    final DiskIndex index;

    private DiskSegment(SegmentSpec spec, RegisteredFile file, TransferEngine engine, FileChannel channel, DiskIndex index) {
        this.spec = spec;
        this.file = file;
        this.engine = engine;
        this.channel = channel;
        this.index = index;
    }

    /**
     * Opens the disk file {@code DIR/tent4j-store.disk} of {@code size} bytes and its index, creating both if the
     * directory holds neither, and registers the file with the engine. A file left by an earlier run (a clean stop or
     * a crash) is reopened: the index drops what does not check ({@link DiskIndex}) and {@link #index} holds the rest,
     * for the master to adopt. Refused with INVALID_PARAMS when the directory is missing, not a directory or not
     * writable, when the size is under 4 KiB, when the file there has no index, a foreign one, or was made for another
     * size (each naming the file), when another process holds it, or when the engine cannot serve files.
     */
    static DiskSegment open(TransferEngine engine, Path dir, long size, String host) {
        check(dir, size);
        Path path = dir.toAbsolutePath().normalize().resolve(FILE);
        Path indexPath = DiskIndex.of(path);
        boolean fresh = !Files.exists(path);
        if (fresh && Files.exists(indexPath)) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk dir " + dir + " holds the index " + indexPath
                    + " but not its disk file " + path.getFileName() + ": move the index away to start afresh");
        }
        if (!fresh && !Files.exists(indexPath)) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk file " + path + " has no index beside it ("
                    + indexPath.getFileName() + "): not a tent4j disk segment, or its index was lost; move it away");
        }
        FileChannel channel;
        try {
            channel = fresh
                    ? FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE)
                    : FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (IOException | RuntimeException e) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk dir " + dir + " is not writable: cannot "
                    + (fresh ? "create " : "open ") + path.getFileName() + ": " + e, e);
        }
        DiskIndex index = null;
        try {
            if (channel.tryLock() == null) {
                throw new StoreException(StoreError.INVALID_PARAMS, "disk file " + path + " is in use by another process");
            }
            if (fresh) {
                channel.write(java.nio.ByteBuffer.wrap(new byte[1]), size - 1); // its size, so a restart can check it
                channel.force(true);
                index = DiskIndex.create(indexPath, size);
            } else {
                if (channel.size() != size) {
                    throw new StoreException(StoreError.INVALID_PARAMS, "disk file " + path + " holds " + channel.size()
                            + " bytes, but the disk size asked for is " + size + ": start the node with that size, or "
                            + "move the file and its index away");
                }
                index = DiskIndex.open(indexPath, path, channel, size);
                LOG.info("disk segment {} reopened: {} objects in its index, {} records dropped", path,
                        index.entries().size(), index.dropped());
            }
            String noDirect = probeDirect(path);
            if (noDirect != null) {
                LOG.warn("disk segment {}: the file system refuses O_DIRECT ({}); offloads and disk reads go through "
                        + "the page cache (durability still by fdatasync)", path, noDirect);
            }
            RegisteredFile f = engine.registerFile(path, size, Permission.READ_WRITE);
            // a new id each run: the master may still hold the last run's segment until that client expires
            SegmentSpec spec = new SegmentSpec(UUID.randomUUID().toString(), engine.segmentName(), host, f.address(),
                    f.length(), Tier.DISK, path.toString());
            return new DiskSegment(spec, f, engine, channel, index);
        } catch (TransferException | StoreException | IOException e) {
            if (index != null) {
                index.close();
            }
            closeQuietly(channel, path);
            if (fresh) {
                deleteQuietly(path, indexPath);
            }
            if (e instanceof StoreException se && se.error() == StoreError.INVALID_PARAMS) {
                throw se;
            }
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

    /** Unregisters the file and closes it and its index; both stay, so a node started again reopens them. */
    @Override
    public void close() {
        try {
            engine.unregisterFile(file);
        } catch (RuntimeException e) {
            LOG.warn("unregistering disk segment file {} failed: {}", file.path(), e.getMessage());
        }
        index.close();
        closeQuietly(channel, file.path());
    }

    private static void closeQuietly(FileChannel channel, Path path) {
        try {
            channel.close();
        } catch (IOException e) {
            LOG.warn("closing disk segment file {} failed: {}", path, e.getMessage());
        }
    }

    private static void deleteQuietly(Path... paths) {
        for (Path p : paths) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                LOG.warn("deleting {} failed: {}", p, e.getMessage());
            }
        }
    }
}

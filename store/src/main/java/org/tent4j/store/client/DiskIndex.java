package org.tent4j.store.client;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * The durable index of a node's disk file ({@code tent4j-store.disk.index} beside it), so a restarted node knows what
 * its file holds. A 32-byte header (magic, format, the disk file's size, CRC32C of the header) and then append-only
 * records: an offload (key, offset, length, put id, CRC32C of the bytes) or a tombstone (offset, length: whatever lay
 * there is gone), each closed by the CRC32C of the record itself. A later record over an earlier one's range replaces
 * it. Records are appended only after the bytes they name are durable and made durable ({@link #append} ends with an
 * fdatasync) before the offload is reported, so the master never relies on a replica the node could forget. Reopened,
 * the records are read up to the first whose CRC fails (a torn tail: what follows cannot be framed); each surviving
 * offload's bytes are read back and checked against their CRC32C; the rest are dropped and counted. The index is then
 * rewritten with only what survived (written aside, fdatasync'ed, renamed over), as it is whenever the records
 * appended outgrow four times the live ones.
 */
final class DiskIndex implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DiskIndex.class);
    static final long MAGIC = 0x54344A4449445831L; // "T4JDIDX1"
    static final int FORMAT = 1;
    static final int HEADER = 32;
    private static final byte PUT = 1;
    private static final byte TOMBSTONE = 2;
    /** Rewrite once the file holds this many times the bytes of its live records (and at least 1 MiB). */
    private static final int COMPACT_FACTOR = 4;

    /** An offloaded object the file holds: where, its size, put id and CRC32C of its bytes. */
    record Entry(String key, long offset, long length, long putId, int crc) {
    }

    private final Path path;
    private final long diskSize;
    private FileChannel channel;
    /** Live records by offset: none overlap. */
    private final TreeMap<Long, Entry> live = new TreeMap<>();
    private long end;
    private long liveBytes;
    /** Records dropped when the index was opened: a torn tail, bytes not matching their CRC32C, a range off the file. */
    private long dropped;

    private DiskIndex(Path path, long diskSize) {
        this.path = path;
        this.diskSize = diskSize;
    }

    static Path of(Path disk) {
        return disk.resolveSibling(disk.getFileName() + ".index");
    }

    /** A fresh, empty index for a new disk file of {@code diskSize} bytes. */
    static DiskIndex create(Path path, long diskSize) throws IOException {
        DiskIndex index = new DiskIndex(path, diskSize);
        index.rewrite();
        return index;
    }

    /**
     * Reopens the index of {@code disk} (its open file {@code data}): refused (INVALID_PARAMS naming the file) when it
     * is not a tent4j disk index or was written for a file of another size.
     */
    static DiskIndex open(Path path, Path disk, FileChannel data, long diskSize) throws IOException {
        List<Entry> entries = new ArrayList<>();
        long dropped;
        try (FileChannel in = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer all = ByteBuffer.allocate((int) Math.min(in.size(), Integer.MAX_VALUE));
            while (all.hasRemaining() && in.read(all) >= 0) {
                // read it whole: an index is small (some 50 bytes per object)
            }
            all.flip();
            checkHeader(path, disk, all, diskSize);
            dropped = parse(path, all, entries);
        }
        DiskIndex index = new DiskIndex(path, diskSize);
        for (Entry e : entries) {
            index.apply(e);
        }
        long bad = 0;
        for (Entry e : List.copyOf(index.live.values())) {
            if (e.length <= 0 || e.offset < 0 || e.offset > diskSize - e.length) {
                LOG.warn("disk index {}: record of key '{}' names [{}, +{}) outside the {}-byte file: dropped", path,
                        e.key, e.offset, e.length, diskSize);
            } else if (crc(data, e.offset, e.length) != e.crc) {
                LOG.warn("disk index {}: the bytes of key '{}' at offset {} of {} ({} bytes) do not match their "
                        + "CRC32C: dropped", path, e.key, e.offset, disk, e.length);
            } else {
                continue;
            }
            bad++;
            index.remove(e.offset, e.length);
        }
        index.dropped = dropped + bad;
        index.rewrite();
        return index;
    }

    private static void checkHeader(Path path, Path disk, ByteBuffer b, long diskSize) {
        if (b.remaining() < HEADER || b.getLong(0) != MAGIC) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk index " + path + " is not a tent4j disk index, so "
                    + disk + " is not known to hold a disk segment: move both away or point --disk-dir elsewhere");
        }
        CRC32C crc = new CRC32C();
        crc.update(b.slice(0, HEADER - 4));
        if ((int) crc.getValue() != b.getInt(HEADER - 4) || b.getInt(8) != FORMAT) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk index " + path + ": damaged header or format "
                    + b.getInt(8) + " (this node reads format " + FORMAT + ")");
        }
        if (b.getLong(12) != diskSize) {
            throw new StoreException(StoreError.INVALID_PARAMS, "disk file " + disk + " was made for " + b.getLong(12)
                    + " bytes, but the disk size asked for is " + diskSize + ": start the node with that size, or "
                    + "move the file and its index away");
        }
    }

    /** Reads records until the end or the first that does not frame or whose CRC fails; how many were lost that way. */
    private static long parse(Path path, ByteBuffer b, List<Entry> out) {
        int pos = HEADER;
        while (pos < b.limit()) {
            int start = pos;
            try {
                byte type = b.get(pos);
                int keyLen = Short.toUnsignedInt(b.getShort(pos + 1));
                int len = 1 + 2 + keyLen + 8 + 8 + 8 + 4;
                CRC32C crc = new CRC32C();
                crc.update(b.slice(start, len));
                if ((type != PUT && type != TOMBSTONE) || (int) crc.getValue() != b.getInt(start + len)) {
                    throw new IndexOutOfBoundsException("record CRC");
                }
                byte[] key = new byte[keyLen];
                b.get(pos + 3, key);
                pos += 3 + keyLen;
                long offset = b.getLong(pos);
                long length = b.getLong(pos + 8);
                long putId = b.getLong(pos + 16);
                int dataCrc = b.getInt(pos + 24);
                pos += 28 + 4;
                out.add(new Entry(type == TOMBSTONE ? null : new String(key, StandardCharsets.UTF_8), offset, length,
                        putId, dataCrc));
            } catch (IndexOutOfBoundsException e) {
                LOG.warn("disk index {}: the record at byte {} is torn or damaged (its CRC fails): it and the {} bytes "
                        + "after it are dropped", path, start, b.limit() - start);
                return 1;
            }
        }
        return 0;
    }

    private static int crc(FileChannel data, long offset, long length) throws IOException {
        CRC32C crc = new CRC32C();
        ByteBuffer buf = ByteBuffer.allocateDirect((int) Math.min(length, 1 << 20));
        for (long done = 0; done < length; ) {
            buf.clear().limit((int) Math.min(buf.capacity(), length - done));
            int n = data.read(buf, offset + done);
            if (n < 0) {
                return ~0 ^ (int) crc.getValue(); // the file ends early: cannot match
            }
            buf.flip();
            crc.update(buf);
            done += n;
        }
        return (int) crc.getValue();
    }

    /** Records dropped when the index was opened: a torn tail, bytes not matching their CRC32C, a range off the file. */
    long dropped() {
        return dropped;
    }

    /** What survived, for the master to adopt. */
    synchronized List<Entry> entries() {
        return List.copyOf(live.values());
    }

    /**
     * Records these offloads (their bytes already durable) and tombstones (offset to length: ranges whose old content
     * is gone), then makes them durable: only after this returns may the offloads be reported.
     */
    synchronized void append(List<Entry> offloads, Map<Long, Long> tombstones) throws IOException {
        if (offloads.isEmpty() && tombstones.isEmpty()) {
            return;
        }
        List<ByteBuffer> records = new ArrayList<>();
        for (Map.Entry<Long, Long> t : tombstones.entrySet()) {
            Entry e = new Entry(null, t.getKey(), t.getValue(), 0, 0);
            records.add(encode(e));
            apply(e);
        }
        for (Entry e : offloads) {
            records.add(encode(e));
            apply(e);
        }
        if (end > COMPACT_FACTOR * (HEADER + liveBytes) && end > 1 << 20) {
            rewrite();
            return;
        }
        for (ByteBuffer r : records) {
            while (r.hasRemaining()) {
                end += channel.write(r, end);
            }
        }
        channel.force(false);
    }

    private void apply(Entry e) {
        remove(e.offset, Math.max(e.length, 1));
        if (e.key != null) {
            live.put(e.offset, e);
            liveBytes += recordBytes(e);
        }
    }

    /** Forgets the live records overlapping {@code [offset, offset + length)}. */
    private void remove(long offset, long length) {
        Map.Entry<Long, Entry> before = live.floorEntry(offset);
        long from = before != null && before.getKey() + before.getValue().length > offset ? before.getKey() : offset;
        for (var it = live.subMap(from, true, offset + length, false).values().iterator(); it.hasNext(); ) {
            liveBytes -= recordBytes(it.next());
            it.remove();
        }
    }

    private static int recordBytes(Entry e) {
        return 3 + (e.key == null ? 0 : e.key.getBytes(StandardCharsets.UTF_8).length) + 28 + 4;
    }

    private static ByteBuffer encode(Entry e) {
        byte[] key = e.key == null ? new byte[0] : e.key.getBytes(StandardCharsets.UTF_8);
        if (key.length > 0xFFFF) {
            throw new IllegalArgumentException("key of " + key.length + " bytes is too long for the disk index");
        }
        ByteBuffer b = ByteBuffer.allocate(recordBytes(e));
        b.put(e.key == null ? TOMBSTONE : PUT).putShort((short) key.length).put(key)
                .putLong(e.offset).putLong(e.length).putLong(e.putId).putInt(e.crc);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue());
        return b.flip();
    }

    /** Writes header and live records to a file beside the index, makes it durable and renames it over the index. */
    private void rewrite() throws IOException {
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        ByteBuffer header = ByteBuffer.allocate(HEADER).putLong(MAGIC).putInt(FORMAT).putLong(diskSize).putLong(0);
        CRC32C crc = new CRC32C();
        crc.update(header.array(), 0, HEADER - 4);
        header.putInt((int) crc.getValue()).flip();
        long pos = 0;
        try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            List<ByteBuffer> all = new ArrayList<>();
            all.add(header);
            for (Entry e : live.values()) {
                all.add(encode(e));
            }
            for (ByteBuffer r : all) {
                while (r.hasRemaining()) {
                    pos += out.write(r, pos);
                }
            }
            out.force(false);
        }
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDir(path.getParent());
        if (channel != null) {
            channel.close();
        }
        channel = FileChannel.open(path, StandardOpenOption.WRITE);
        end = pos;
    }

    /** Makes a rename or a new file in {@code dir} durable (fsync of the directory). */
    static void syncDir(Path dir) throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    @Override
    public synchronized void close() {
        try {
            channel.close();
        } catch (IOException e) {
            LOG.warn("closing disk index {} failed: {}", path, e.getMessage());
        }
    }
}

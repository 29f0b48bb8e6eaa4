package org.tent4j.metadata.http;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;
import java.util.zip.CheckedOutputStream;

/**
 * The metadata server's data file: the whole table, written to a temp file, fsynced and renamed over the old one, so a
 * crash leaves either the old or the new snapshot, never a torn one. Layout (big endian): magic {@code T4JMETA1},
 * epoch (length-prefixed UTF-8), revision, entry count, entries (key, value, revision, expiry as epoch millis or 0),
 * then a CRC32 of everything before it.
 */
class SnapshotFile { // not final: tests give the server a file whose writes fail or stall
    private static final byte[] MAGIC = "T4JMETA1".getBytes(StandardCharsets.US_ASCII);

    /** One persisted key. {@code expiresAtMillis} is wall-clock epoch millis, 0 when the key does not expire. */
    record Entry(String key, byte[] value, long revision, long expiresAtMillis) {
    }

    /** The persisted table. */
    record Snapshot(String epoch, long revision, List<Entry> entries) {
    }

    private final Path file;

    SnapshotFile(Path file) {
        this.file = file.toAbsolutePath();
    }

    Path path() {
        return file;
    }

    /** Reads the snapshot, or returns {@code null} if the file does not exist. */
    Snapshot read() throws IOException {
        if (!Files.exists(file)) {
            return null;
        }
        byte[] all = Files.readAllBytes(file);
        if (all.length < MAGIC.length + 4) {
            throw new IOException(file + " is not a tent4j metadata data file (" + all.length + " bytes)");
        }
        CRC32 crc = new CRC32();
        crc.update(all, 0, all.length - 4);
        int stored = ByteBuffer.wrap(all, all.length - 4, 4).getInt();
        if ((int) crc.getValue() != stored) {
            throw new IOException(file + " is damaged: CRC mismatch");
        }
        try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(all, 0, all.length - 4))) {
            byte[] magic = in.readNBytes(MAGIC.length);
            if (!java.util.Arrays.equals(magic, MAGIC)) {
                throw new IOException(file + " is not a tent4j metadata data file (bad magic)");
            }
            String epoch = new String(readBytes(in), StandardCharsets.UTF_8);
            long revision = in.readLong();
            int count = in.readInt();
            List<Entry> entries = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                String key = new String(readBytes(in), StandardCharsets.UTF_8);
                byte[] value = readBytes(in);
                entries.add(new Entry(key, value, in.readLong(), in.readLong()));
            }
            return new Snapshot(epoch, revision, entries);
        } catch (EOFException e) {
            throw new IOException(file + " is truncated", e);
        }
    }

    private static byte[] readBytes(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0) {
            throw new IOException("negative length " + n);
        }
        return in.readNBytes(n);
    }

    /**
     * Writes {@code snapshot} durably: temp file, fsync, atomic rename, fsync of the directory. Streamed through a
     * small buffer, so writing needs no second copy of the table in memory however large it is.
     */
    void write(Snapshot snapshot) throws IOException {
        Path dir = file.getParent();
        Files.createDirectories(dir);
        Path tmp = dir.resolve(file.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            CRC32 crc = new CRC32();
            // not closed: closing would close the channel before force()
            DataOutputStream raw = new DataOutputStream(new BufferedOutputStream(Channels.newOutputStream(ch),
                    64 * 1024));
            DataOutputStream out = new DataOutputStream(new CheckedOutputStream(raw, crc));
            out.write(MAGIC);
            writeBytes(out, snapshot.epoch().getBytes(StandardCharsets.UTF_8));
            out.writeLong(snapshot.revision());
            out.writeInt(snapshot.entries().size());
            for (Entry e : snapshot.entries()) {
                writeBytes(out, e.key().getBytes(StandardCharsets.UTF_8));
                writeBytes(out, e.value());
                out.writeLong(e.revision());
                out.writeLong(e.expiresAtMillis());
            }
            out.flush();
            raw.writeInt((int) crc.getValue());
            raw.flush();
            ch.force(true);
        }
        try {
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
        }
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException e) {
            // some file systems cannot fsync a directory; the rename is still atomic
        }
    }

    private static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }
}

package org.tent4j.store.master;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.Tier;

/**
 * A durable log entry's bytes: one or more commands applied at one time, in order (a batch call's items are one
 * entry, one group commit), and the proposal id the proposing master waits on (the state ignores it). Every
 * {@link Command} kind has a tag; a tag not known here is refused, never skipped, so a newer master's log is not
 * half-applied by an older one.
 */
final class CommandCodec {
    private static final int MAGIC = 0x5434_4C45; // "T4LE"
    private static final int VERSION = 1;

    private CommandCodec() {
    }

    /** What one log entry carries. */
    record Entry(long proposal, long now, List<Command<?>> commands) {
    }

    static byte[] encode(Entry e) {
        try {
            CodecStreams.Out bytes = new CodecStreams.Out(64 + 48 * e.commands().size());
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            out.writeLong(e.proposal());
            out.writeLong(e.now());
            out.writeInt(e.commands().size());
            for (Command<?> c : e.commands()) {
                write(out, c);
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException impossible) {
            throw new UncheckedIOException(impossible);
        }
    }

    /** Magic, version, proposal id and time: what {@link #proposal} and {@link #now} read without decoding the rest. */
    private static final int HEADER_BYTES = 24;

    /** The proposal id of the entry in {@code b} (not moved), after its magic and version are checked. */
    static long proposal(java.nio.ByteBuffer b) {
        int at = b.position();
        if (b.remaining() < HEADER_BYTES) {
            throw new IllegalArgumentException("log entry of " + b.remaining() + " bytes is cut short");
        }
        if (b.getInt(at) != MAGIC || b.getInt(at + 4) != VERSION) {
            throw new IllegalArgumentException(String.format("not a store master log entry (magic %08x, version %d;"
                    + " expected %08x, %d)", b.getInt(at), b.getInt(at + 4), MAGIC, VERSION));
        }
        return b.getLong(at + 8);
    }

    /** The time of the entry in {@code b}, whose header {@link #proposal} checked. */
    static long now(java.nio.ByteBuffer b) {
        return b.getLong(b.position() + 16);
    }

    /** The entry these bytes encode; {@link IllegalArgumentException} naming what is wrong if they are not one. */
    static Entry decode(byte[] b) {
        try {
            java.nio.ByteBuffer head = java.nio.ByteBuffer.wrap(b);
            long proposal = proposal(head);
            long now = now(head);
            DataInputStream in = new DataInputStream(new CodecStreams.In(b));
            in.skipNBytes(HEADER_BYTES);
            int n = count(in);
            List<Command<?>> commands = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                commands.add(read(in));
            }
            if (in.available() != 0) {
                throw new IllegalArgumentException(in.available() + " bytes after the last command");
            }
            return new Entry(proposal, now, commands);
        } catch (IOException cut) {
            throw new IllegalArgumentException("log entry of " + b.length + " bytes is cut short", cut);
        }
    }

    private static void write(DataOutputStream out, Command<?> command) throws IOException {
        switch (command) {
            case Command.PutStart c -> {
                // 1 was a put start without the write-through choice: logs written before it still read, as unset
                out.writeByte(26);
                str(out, c.clientId());
                str(out, c.key());
                out.writeLong(c.size());
                config(out, c.config());
                Boolean wt = c.config().writeThrough();
                out.writeByte(wt == null ? -1 : wt ? 1 : 0);
                str(out, c.writerHost());
                out.writeBoolean(c.upsert());
                out.writeLong(c.seed());
            }
            case Command.PutEnd c -> {
                out.writeByte(2);
                str(out, c.clientId());
                str(out, c.key());
                out.writeLong(c.putId());
            }
            case Command.PutRevoke c -> {
                out.writeByte(3);
                str(out, c.clientId());
                str(out, c.key());
                out.writeLong(c.putId());
            }
            case Command.Commit c -> {
                out.writeByte(4);
                str(out, c.clientId());
                out.writeInt(c.items().size());
                for (Command.CommitItem it : c.items()) {
                    str(out, it.key());
                    out.writeLong(it.size());
                    longs(out, it.reservations());
                    longs(out, it.addresses());
                }
                out.writeInt(c.retire().size());
                for (long id : c.retire()) {
                    out.writeLong(id);
                }
                out.writeBoolean(c.refill() != null);
                if (c.refill() != null) {
                    out.writeLong(c.refill().bytes());
                    out.writeInt(c.refill().replicas());
                    str(out, c.refill().writerHost());
                }
                out.writeLong(c.seed());
            }
            case Command.GrantRead c -> {
                out.writeByte(5);
                str(out, c.key());
            }
            case Command.RenewReads c -> {
                out.writeByte(29);
                strs(out, c.keys());
            }
            case Command.Remove c -> {
                out.writeByte(6);
                str(out, c.key());
                out.writeBoolean(c.force());
            }
            case Command.RemoveKeys c -> {
                out.writeByte(7);
                strs(out, c.keys());
                out.writeBoolean(c.force());
            }
            case Command.RemoveAll c -> {
                out.writeByte(8);
                out.writeBoolean(c.force());
            }
            case Command.Mount c -> {
                // 9 and 17 (memory, disk) were mounts without an incarnation: logs written before it still read, as 0
                SegmentSpec s = c.segment();
                out.writeByte(s.tier() == Tier.MEMORY ? 20 : 21);
                str(out, c.clientId());
                str(out, s.id());
                str(out, s.engineSegment());
                str(out, s.host());
                out.writeLong(s.base());
                out.writeLong(s.size());
                if (s.tier() != Tier.MEMORY) {
                    str(out, s.file());
                }
                out.writeLong(c.incarnation());
            }
            case Command.DropDiskReplicas c -> {
                out.writeByte(18);
                str(out, c.clientId());
                str(out, c.segmentId());
                out.writeInt(c.replicas().size());
                for (Command.DiskReplica r : c.replicas()) {
                    str(out, r.key());
                    out.writeLong(r.offset());
                    out.writeLong(r.size());
                    out.writeLong(r.crc32c());
                }
            }
            case Command.AdoptDiskReplicas c -> {
                out.writeByte(23);
                str(out, c.clientId());
                str(out, c.segmentId());
                out.writeInt(c.replicas().size());
                for (Command.Adopted r : c.replicas()) {
                    str(out, r.key());
                    out.writeLong(r.offset());
                    out.writeLong(r.size());
                    out.writeLong(r.crc32c());
                    out.writeLong(r.putId());
                }
            }
            case Command.TakeDiskWork c -> {
                out.writeByte(24);
                str(out, c.clientId());
                out.writeInt(c.max());
                out.writeLong(c.freedAck());
            }
            case Command.TakeOffloads c -> {
                out.writeByte(15);
                str(out, c.clientId());
                out.writeInt(c.max());
            }
            case Command.OffloadDone c -> {
                out.writeByte(16);
                str(out, c.clientId());
                out.writeInt(c.results().size());
                for (Command.OffloadResult r : c.results()) {
                    out.writeLong(r.taskId());
                    out.writeBoolean(r.ok());
                    out.writeLong(r.crc32c());
                    str(out, r.error());
                }
            }
            case Command.Unmount c -> {
                out.writeByte(10);
                str(out, c.clientId());
                str(out, c.segmentId());
            }
            case Command.Heartbeat c -> {
                out.writeByte(11);
                str(out, c.clientId());
            }
            case Command.Leave c -> {
                out.writeByte(12);
                str(out, c.clientId());
            }
            case Command.Tick c -> out.writeByte(c.evict() ? 13 : 28);
            case Command.Grace c -> out.writeByte(25);
            case Command.Evict c -> out.writeByte(14);
            case Command.EvictVictims c -> {
                out.writeByte(27);
                victims(out, c.disk());
                victims(out, c.memory());
            }
            case Command.Once<?> c -> {
                out.writeByte(19);
                str(out, c.clientId());
                out.writeLong(c.seq());
                write(out, c.command());
            }
        }
    }

    private static Command<?> read(DataInputStream in) throws IOException {
        int tag = in.readUnsignedByte();
        return switch (tag) {
            case 1 -> new Command.PutStart(str(in), str(in), in.readLong(), config(in), str(in), in.readBoolean(), in.readLong());
            case 26 -> new Command.PutStart(str(in), str(in), in.readLong(), writeThrough(config(in), in.readByte()), str(in),
                    in.readBoolean(), in.readLong());
            case 2 -> new Command.PutEnd(str(in), str(in), in.readLong());
            case 3 -> new Command.PutRevoke(str(in), str(in), in.readLong());
            case 4 -> {
                String client = str(in);
                int n = count(in);
                List<Command.CommitItem> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    items.add(new Command.CommitItem(str(in), in.readLong(), longs(in), longs(in)));
                }
                int r = count(in);
                List<Long> retire = new ArrayList<>(r);
                for (int i = 0; i < r; i++) {
                    retire.add(in.readLong());
                }
                Command.Reserve refill = in.readBoolean() ? new Command.Reserve(in.readLong(), in.readInt(), str(in)) : null;
                yield new Command.Commit(client, items, retire, refill, in.readLong());
            }
            case 5 -> new Command.GrantRead(str(in));
            case 29 -> new Command.RenewReads(strs(in));
            case 6 -> new Command.Remove(str(in), in.readBoolean());
            case 7 -> new Command.RemoveKeys(strs(in), in.readBoolean());
            case 8 -> new Command.RemoveAll(in.readBoolean());
            case 9 -> new Command.Mount(str(in), new SegmentSpec(str(in), str(in), str(in), in.readLong(), in.readLong()), 0);
            case 20 -> new Command.Mount(str(in), new SegmentSpec(str(in), str(in), str(in), in.readLong(), in.readLong()),
                    in.readLong());
            case 10 -> new Command.Unmount(str(in), str(in));
            case 11 -> new Command.Heartbeat(str(in));
            case 12 -> new Command.Leave(str(in));
            case 13 -> new Command.Tick(true);
            case 28 -> new Command.Tick(false);
            case 25 -> new Command.Grace();
            case 14 -> new Command.Evict();
            case 27 -> new Command.EvictVictims(victims(in), victims(in));
            case 15 -> new Command.TakeOffloads(str(in), in.readInt());
            case 24 -> new Command.TakeDiskWork(str(in), in.readInt(), in.readLong());
            case 23 -> {
                String client = str(in);
                String segment = str(in);
                int n = count(in);
                List<Command.Adopted> rs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    rs.add(new Command.Adopted(str(in), in.readLong(), in.readLong(), in.readLong(), in.readLong()));
                }
                yield new Command.AdoptDiskReplicas(client, segment, rs);
            }
            case 18 -> {
                String client = str(in);
                String segment = str(in);
                int n = count(in);
                List<Command.DiskReplica> rs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    rs.add(new Command.DiskReplica(str(in), in.readLong(), in.readLong(), in.readLong()));
                }
                yield new Command.DropDiskReplicas(client, segment, rs);
            }
            case 16 -> {
                String client = str(in);
                int n = count(in);
                List<Command.OffloadResult> results = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    results.add(new Command.OffloadResult(in.readLong(), in.readBoolean(), in.readLong(), str(in)));
                }
                yield new Command.OffloadDone(client, results);
            }
            case 17 -> new Command.Mount(str(in), new SegmentSpec(str(in), str(in), str(in), in.readLong(), in.readLong(),
                    Tier.DISK, str(in)), 0);
            case 21 -> new Command.Mount(str(in), new SegmentSpec(str(in), str(in), str(in), in.readLong(), in.readLong(),
                    Tier.DISK, str(in)), in.readLong());
            case 19 -> {
                String client = str(in);
                long seq = in.readLong();
                try {
                    yield new Command.Once<>(client, seq, read(in));
                } catch (IllegalArgumentException notCarried) {
                    throw new IllegalArgumentException("request " + seq + " of client " + client + ": " + notCarried.getMessage());
                }
            }
            default -> throw new IllegalArgumentException("unknown command tag " + tag);
        };
    }

    private static void config(DataOutputStream out, ReplicateConfig c) throws IOException {
        out.writeInt(c.replicas());
        strs(out, c.preferredSegments());
        out.writeBoolean(c.preferLocalHost());
        out.writeBoolean(c.softPin());
        out.writeLong(c.softPinTtl() == null ? -1 : c.softPinTtl().toNanos());
        out.writeBoolean(c.hardPin());
        strs(out, c.excludedSegments());
    }

    private static ReplicateConfig config(DataInputStream in) throws IOException {
        int replicas = in.readInt();
        List<String> preferred = strs(in);
        boolean local = in.readBoolean();
        boolean soft = in.readBoolean();
        long ttl = in.readLong();
        boolean hard = in.readBoolean();
        return new ReplicateConfig(replicas, preferred, local, soft, ttl < 0 ? null : Duration.ofNanos(ttl), hard, strs(in));
    }

    private static ReplicateConfig writeThrough(ReplicateConfig c, byte choice) {
        return switch (choice) {
            case -1 -> c;
            case 0, 1 -> c.withWriteThrough(choice == 1);
            default -> throw new IllegalArgumentException("write-through choice " + choice + " (expected -1, 0 or 1)");
        };
    }

    // strings are length-prefixed UTF-8, -1 for null: writeUTF stops at 64 KiB and has no null
    private static void str(DataOutputStream out, String s) throws IOException {
        if (s == null) {
            out.writeInt(-1);
            return;
        }
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }

    private static String str(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n == -1) {
            return null;
        }
        if (n < 0 || n > in.available()) {
            throw new IllegalArgumentException("string of " + n + " bytes with " + in.available() + " left");
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    private static void victims(DataOutputStream out, Command.Victims v) throws IOException {
        out.writeLong(v.cutoff());
        out.writeLong(v.target());
        out.writeBoolean(v.softPinned());
        strs(out, v.keys());
    }

    private static Command.Victims victims(DataInputStream in) throws IOException {
        return new Command.Victims(in.readLong(), in.readLong(), in.readBoolean(), strs(in));
    }

    private static void strs(DataOutputStream out, List<String> list) throws IOException {
        out.writeInt(list.size());
        for (String s : list) {
            str(out, s);
        }
    }

    private static List<String> strs(DataInputStream in) throws IOException {
        int n = count(in);
        List<String> list = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            list.add(str(in));
        }
        return list;
    }

    private static void longs(DataOutputStream out, long[] a) throws IOException {
        out.writeInt(a.length);
        for (long v : a) {
            out.writeLong(v);
        }
    }

    private static long[] longs(DataInputStream in) throws IOException {
        long[] a = new long[count(in)];
        for (int i = 0; i < a.length; i++) {
            a[i] = in.readLong();
        }
        return a;
    }

    /** A count read from the entry, bounded by its bytes left (each element takes at least one), so a bad one fails fast. */
    private static int count(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > in.available()) {
            throw new IllegalArgumentException("count " + n + " with " + in.available() + " bytes left");
        }
        return n;
    }
}

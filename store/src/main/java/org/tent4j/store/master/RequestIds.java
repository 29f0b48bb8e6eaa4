package org.tent4j.store.master;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * The answers to each client's last {@link #WINDOW} requests that carried a request id ({@link Command.Once}), so a
 * request sent again (its answer lost with a master that failed) is answered as the first time, never applied twice.
 * Part of the state: applied in log order on every master and kept in snapshots, so a replay decides alike. A client
 * numbers its requests upwards; one older than its window is refused (it can no longer be told whether it was
 * applied). At most {@link #MAX_CLIENTS} clients are kept, the one least recently heard from dropped first.
 */
final class RequestIds {
    /**
     * Above a client's calls in flight at once ({@code MasterConnection} keeps at most 1,024 on its stream); a batch's
     * items take one each, so a batch of more items than this, sent again, finds its first items refused as too old.
     */
    static final int WINDOW = 2048;
    /** With {@link #WINDOW}, bounds the windows to about 2 M answers (a put ticket is ~100 bytes). */
    static final int MAX_CLIENTS = 1024;
    /** {@link #answer} when the request was not seen. */
    static final Object NONE = new Object();

    private static final class Window {
        final LinkedHashMap<Long, Object> answers = new LinkedHashMap<>();
        /** Every request id at or below this one has left the window. */
        long floor = Long.MIN_VALUE;
    }

    // access order: the client heard from longest ago is first, and dropped first
    private final LinkedHashMap<String, Window> clients = new LinkedHashMap<>(16, 0.75f, true);

    /**
     * A command with a request id: the recorded answer (or refusal) when the id was seen, else {@code apply}'s, recorded.
     */
    Object once(String clientId, long seq, java.util.function.Supplier<Object> apply) {
        Object seen = answer(clientId, seq);
        if (seen != NONE) {
            if (seen instanceof StoreException refused) {
                throw refused;
            }
            return seen;
        }
        Object r;
        try {
            r = apply.get();
        } catch (StoreException refused) {
            record(clientId, seq, refused);
            throw refused;
        }
        record(clientId, seq, r);
        return r;
    }

    /** The answer recorded for {@code seq} (a result, null, or the {@link StoreException} it was refused with), or {@link #NONE}. */
    Object answer(String client, long seq) {
        Window w = clients.get(client);
        if (w == null) {
            return NONE;
        }
        if (w.answers.containsKey(seq)) {
            return w.answers.get(seq);
        }
        if (seq <= w.floor) {
            throw new StoreException(StoreError.INVALID_PARAMS, "request " + seq + " of client " + client + " is older "
                    + "than the last " + WINDOW + " it sent: whether it was applied can no longer be told; nothing done");
        }
        return NONE;
    }

    void record(String client, long seq, Object answer) {
        Window w = clients.computeIfAbsent(client, c -> new Window());
        w.answers.put(seq, answer);
        if (w.answers.size() > WINDOW) {
            Iterator<Map.Entry<Long, Object>> oldest = w.answers.entrySet().iterator();
            w.floor = Math.max(w.floor, oldest.next().getKey());
            oldest.remove();
        }
        if (clients.size() > MAX_CLIENTS) {
            Iterator<String> oldest = clients.keySet().iterator();
            oldest.next();
            oldest.remove();
        }
    }

    /** Requests recorded, over all clients (for tests and views). */
    int size() {
        return clients.values().stream().mapToInt(w -> w.answers.size()).sum();
    }

    /** Every window, in order, with its answers spelled out: for comparing two states. */
    List<String> describe() {
        List<String> out = new ArrayList<>();
        clients.forEach((client, w) -> w.answers.forEach((seq, a) -> out.add("request " + client + "#" + seq
                + " floor " + w.floor + " -> " + describe(a))));
        return out;
    }

    private static String describe(Object a) {
        return switch (a) {
            case null -> "ok";
            case Command.CommitResult r -> "commit failures " + java.util.Arrays.stream(r.failures())
                    .map(f -> f == null ? "-" : f.getMessage()).toList() + " granted " + r.granted() + " refill "
                    + (r.refillFailure() == null ? "-" : r.refillFailure().getMessage());
            case StoreException e -> "refused " + e.getMessage();
            case Integer removed -> "removed " + removed;
            default -> a.toString();
        };
    }

    void write(DataOutputStream out) throws IOException {
        out.writeInt(clients.size());
        for (Map.Entry<String, Window> c : clients.entrySet()) {
            out.writeUTF(c.getKey());
            out.writeLong(c.getValue().floor);
            out.writeInt(c.getValue().answers.size());
            for (Map.Entry<Long, Object> a : c.getValue().answers.entrySet()) {
                out.writeLong(a.getKey());
                answer(out, a.getValue());
            }
        }
    }

    void read(DataInputStream in) throws IOException {
        for (int n = in.readInt(); n > 0; n--) {
            Window w = new Window();
            String client = in.readUTF();
            w.floor = in.readLong();
            for (int k = in.readInt(); k > 0; k--) {
                w.answers.put(in.readLong(), answer(in));
            }
            clients.put(client, w);
        }
    }

    private static void answer(DataOutputStream out, Object a) throws IOException {
        switch (a) {
            case null -> out.writeByte(0);
            case Command.PutTicket t -> {
                out.writeByte(1);
                out.writeLong(t.putId());
                replicas(out, t.replicas());
            }
            case Command.CommitResult r -> {
                out.writeByte(2);
                out.writeInt(r.failures().length);
                for (StoreException f : r.failures()) {
                    failure(out, f);
                }
                out.writeInt(r.granted().size());
                for (Command.Grant g : r.granted()) {
                    out.writeLong(g.id());
                    replicas(out, List.of(g.range()));
                }
                failure(out, r.refillFailure());
            }
            case StoreException e -> {
                out.writeByte(3);
                failure(out, e);
            }
            case Integer removed -> {
                out.writeByte(4);
                out.writeInt(removed);
            }
            default -> throw new IllegalStateException("no request-id answer encoding for " + a.getClass().getName());
        }
    }

    private static Object answer(DataInputStream in) throws IOException {
        int tag = in.readByte();
        return switch (tag) {
            case 0 -> null;
            case 1 -> new Command.PutTicket(in.readLong(), replicas(in));
            case 2 -> {
                StoreException[] failures = new StoreException[count(in)];
                for (int i = 0; i < failures.length; i++) {
                    failures[i] = failure(in);
                }
                List<Command.Grant> granted = new ArrayList<>();
                for (int n = count(in); n > 0; n--) {
                    granted.add(new Command.Grant(in.readLong(), replicas(in).getFirst()));
                }
                yield new Command.CommitResult(failures, granted, failure(in));
            }
            case 3 -> failure(in);
            case 4 -> in.readInt();
            default -> throw new IOException("unknown request-id answer tag " + tag);
        };
    }

    private static void failure(DataOutputStream out, StoreException e) throws IOException {
        out.writeBoolean(e != null);
        if (e != null) {
            out.writeInt(e.error().code());
            String prefix = e.error() + ": ";
            String m = e.getMessage().startsWith(prefix) ? e.getMessage().substring(prefix.length()) : e.getMessage();
            // writeUTF takes at most 64 KiB; a message is a sentence naming a key or two
            out.writeUTF(m.length() > 8192 ? m.substring(0, 8192) + "..." : m);
        }
    }

    private static StoreException failure(DataInputStream in) throws IOException {
        return in.readBoolean() ? new StoreException(StoreError.ofCode(in.readInt()), in.readUTF()) : null;
    }

    private static void replicas(DataOutputStream out, List<ReplicaLocation> replicas) throws IOException {
        out.writeInt(replicas.size());
        for (ReplicaLocation r : replicas) {
            out.writeUTF(r.segmentId());
            out.writeUTF(r.engineSegment());
            out.writeUTF(r.host());
            out.writeLong(r.address());
            out.writeLong(r.length());
        }
    }

    private static List<ReplicaLocation> replicas(DataInputStream in) throws IOException {
        int n = count(in);
        List<ReplicaLocation> list = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            list.add(new ReplicaLocation(in.readUTF(), in.readUTF(), in.readUTF(), in.readLong(), in.readLong()));
        }
        return list;
    }

    private static int count(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > 1 << 20) {
            throw new IOException("count " + n + " out of range");
        }
        return n;
    }
}

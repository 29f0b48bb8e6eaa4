package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.store.master.Command.ClientStatus;

/** Clients and their liveness: a record per client, made on its first call, dropped when it stays silent past its TTL. */
final class Clients {
    private final MasterState state;
    private final ConcurrentHashMap<String, ClientRecord> byId = new ConcurrentHashMap<>();
    private final AtomicLong indexes = new AtomicLong();

    Clients(MasterState state) {
        this.state = state;
    }

    /** The client's record, made on its first call, marked as heard from at {@code now}. */
    ClientRecord seen(String clientId, long now) {
        ClientRecord client = byId.computeIfAbsent(clientId, id -> new ClientRecord(id, (int) indexes.incrementAndGet(), now));
        client.lastSeen = now;
        return client;
    }

    /** The last client index handed out. */
    long lastIndex() {
        return indexes.get();
    }

    /** Puts back a client of a snapshot (null: none), and the index counter (a restore, before the first command). */
    void restore(ClientRecord client, long lastIndex) {
        if (client != null) {
            byId.put(client.id, client);
        }
        indexes.set(lastIndex);
    }

    ClientRecord get(String clientId) {
        return byId.get(clientId);
    }

    Collection<ClientRecord> all() {
        return byId.values();
    }

    int count() {
        return byId.size();
    }

    ClientStatus heartbeat(long now, String clientId) {
        ClientRecord client = byId.get(clientId);
        if (client == null) {
            return ClientStatus.NEED_REMOUNT;
        }
        client.lastSeen = now;
        return ClientStatus.OK;
    }

    /** Counts every client as heard from at {@code now} ({@link Command.Grace}); how many. */
    int grace(long now) {
        for (ClientRecord client : byId.values()) {
            client.lastSeen = now;
        }
        return byId.size();
    }

    /** Drops a client that closed cleanly, its reservations (freed at once) and its segments; not an expiry. */
    void leave(String clientId) {
        ClientRecord client = byId.remove(clientId);
        if (client != null) {
            state.reservations.releaseAll(client, Long.MAX_VALUE, Long.MIN_VALUE);
            state.segments.drop(new ArrayList<>(client.segments));
        }
    }

    /** Drops the clients silent past the TTL, their reservations and their segments; their ids. */
    List<String> expire(long now) {
        MasterConfig config = state.config();
        long ttl = config.clientTtl().toNanos();
        List<String> expired = new ArrayList<>();
        List<MountedSegment> gone = new ArrayList<>();
        for (ClientRecord client : byId.values()) {
            if (now - client.lastSeen > ttl && byId.remove(client.id, client)) {
                expired.add(client.id);
                // as an abandoned put's space: a client silent past its TTL may only be stalled, and still writing
                state.reservations.releaseAll(client, Long.MAX_VALUE, now + config.putReleaseTimeout().toNanos());
                state.counters.clientsExpired.increment();
                gone.addAll(client.segments);
            }
        }
        state.segments.drop(gone);
        return expired;
    }

    String ownerName(int index) {
        for (ClientRecord c : byId.values()) {
            if (c.index == index) {
                return c.id;
            }
        }
        return "#" + index + " (gone)";
    }

    static final class ClientRecord {
        final String id;
        final int index;
        volatile long lastSeen;
        final Set<MountedSegment> segments = ConcurrentHashMap.newKeySet();
        /** Its live reservations; also the lock over their marks (taken after a shard's, before an allocator's). */
        final List<Reservations.Reservation> reserved = new ArrayList<>();

        /** Granted and not yet committed. */
        long reservedBytes() {
            long sum = 0;
            synchronized (reserved) {
                for (Reservations.Reservation r : reserved) {
                    sum += r.end - r.mark;
                }
            }
            return sum;
        }

        ClientRecord(String id, int index, long now) {
            this.id = id;
            this.index = index;
            this.lastSeen = now;
        }
    }
}

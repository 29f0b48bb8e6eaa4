package org.tent4j.store.master;

import java.time.Duration;
import java.util.List;

import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreException;

/**
 * Every change to the master's state, as a value. {@link MasterState#apply} is the only place state changes, and
 * does so from the command and the time it is applied at alone (placement draws from the command's seed), one
 * command at a time in the order of its {@link LogEntry} index, so a log of entries replays to the same state.
 *
 * @param <R> what applying it answers
 */
public sealed interface Command<R> {

    /** Reserve space for a new object (or, with {@code upsert}, a new version of an existing one). */
    record PutStart(String clientId, String key, long size, ReplicateConfig config, String writerHost, boolean upsert,
                    long seed) implements Command<PutTicket> {
    }

    /** The writer moved every replica's bytes: make the object (or its new version) readable. */
    record PutEnd(String clientId, String key, long putId) implements Command<Void> {
    }

    /** The writer gave up: drop the space reserved by {@code putId}. */
    record PutRevoke(String clientId, String key, long putId) implements Command<Void> {
    }

    /**
     * One round trip for a batch of puts into space reserved earlier: makes each item readable if every replica's
     * range lies inside a reservation of this client at or above its committed mark; then releases the reservations
     * named in {@code retire} and, with {@code refill}, grants fresh ones.
     */
    record Commit(String clientId, List<CommitItem> items, List<Long> retire, Reserve refill, long seed)
            implements Command<CommitResult> {
    }

    /**
     * Space not tied to keys: {@code bytes} on each of {@code replicas} distinct segments, counted as used, owned by
     * the client until it retires it, its client expires, or it lies unused for the put release timeout.
     */
    record Reserve(long bytes, int replicas, String writerHost) {
    }

    /** A value written into reservations: replica i at segment address {@code addresses[i]} of reservation {@code reservations[i]}. */
    record CommitItem(String key, long size, long[] reservations, long[] addresses) {
    }

    /** One reserved range: {@code range.address()} is where it starts, {@code range.length()} its bytes. */
    record Grant(long id, ReplicaLocation range) {
    }

    /**
     * Per item the refusal (null: committed), the reservations granted (empty when none could be placed), and why a
     * refill was refused (null if it was not).
     */
    record CommitResult(StoreException[] failures, List<Grant> granted, StoreException refillFailure) {
    }

    /** Readable replicas of the key, granting a read lease. */
    record GrantRead(String key) implements Command<ReplicaList> {
    }

    /**
     * Extends the read leases of keys read lately, in advance, to a full TTL from now: a durable leader's reads under a
     * held lease that runs short are renewed together (ReadRenewals), so that no read waits for an entry of its own.
     * Keys gone, not complete or without a memory replica since are skipped. Returns how many were renewed.
     */
    record RenewReads(List<String> keys) implements Command<Integer> {
    }

    record Remove(String key, boolean force) implements Command<Void> {
    }

    /**
     * Removes these keys where still removable. {@code RemoveByRegex} matches keys off the stream (a match may be
     * slow) and applies this with what it matched, so the log carries keys, never a pattern to run under the lock.
     */
    record RemoveKeys(List<String> keys, boolean force) implements Command<Integer> {
        public RemoveKeys {
            keys = List.copyOf(keys);
        }
    }

    record RemoveAll(boolean force) implements Command<Integer> {
    }

    /**
     * {@code incarnation}: the mounting client's, new on each start of it. Mounting a segment this master has with the
     * same incarnation is a remount (its objects stay); a mount of the same segment, or of memory of the same engine
     * segment overlapping an old segment, with another incarnation means the old one's process is gone with its bytes:
     * the old segment is dropped first ({@link Segments#mount}).
     */
    record Mount(String clientId, SegmentSpec segment, long incarnation) implements Command<Void> {
    }

    record Unmount(String clientId, String segmentId) implements Command<Void> {
    }

    record Heartbeat(String clientId) implements Command<ClientStatus> {
    }

    /**
     * A client closing cleanly: its record goes with its reservations (released at once: it has stopped writing) and
     * any segment it still has mounted, so it is never counted as expired. An unknown client is no error.
     */
    record Leave(String clientId) implements Command<Void> {
    }

    /**
     * Periodic housekeeping: parked ranges released, dead clients dropped, abandoned puts reclaimed, and with
     * {@code evict} an eviction round. A master's housekeeping thread ticks without one: its evictor thread evicts
     * ({@link EvictVictims}), choosing victims off the ordering point, where a tick's round would walk every object on
     * it. Logs written before hold ticks that evicted, and replay them so.
     */
    record Tick(boolean evict) implements Command<TickReport> {
        public Tick() {
            this(true);
        }
    }

    /**
     * A leader's first command in its term: every client counts as heard from now. A master that was down, or a group
     * electing a leader, heard nobody meanwhile; without it the first tick would expire every client silent for a TTL
     * of log time, nodes that kept their memory and wait to remount included. Answers how many clients it covered.
     */
    record Grace() implements Command<Integer> {
    }

    /**
     * One eviction round and nothing else, applied by the master's evictor thread when usage passed the high
     * watermark (so puts find room without evicting on the event loop).
     */
    record Evict() implements Command<Evicted> {
    }

    record Evicted(long objects, long bytes) {
    }

    /**
     * The evictor's round, its victims chosen before the ordering point ({@link Eviction#plan}): per tier, the objects
     * to take if they are still evictable and no younger than the cutoff then. The walk over every object happens
     * off the ordering point; applying this walks only the victims, so calls wait for that alone.
     */
    record EvictVictims(Victims disk, Victims memory) implements Command<Evicted> {
        public boolean none() {
            return disk.keys().isEmpty() && memory.keys().isEmpty();
        }
    }

    /**
     * One tier's victims: objects leased before {@code cutoff} go, those leased at it only until {@code target} bytes
     * are freed; soft-pinned ones only with {@code softPinned}.
     */
    record Victims(long cutoff, long target, boolean softPinned, List<String> keys) {
        static final Victims NONE = new Victims(Long.MIN_VALUE, 0, false, List.of());

        public Victims {
            keys = List.copyOf(keys);
        }
    }

    /**
     * A node asks for up to {@code max} of the offloads waiting for it (see {@link Offloads}). Logs written before
     * {@link TakeDiskWork} hold it; a master now applies that instead.
     */
    record TakeOffloads(String clientId, int max) implements Command<List<OffloadTask>> {
    }

    /**
     * A node's poll: the disk ranges freed on its disk segment after {@code freedAck} (the last it made durable as
     * tombstones; those up to it are dropped), then up to {@code max} of the offloads waiting for it, in one command so
     * a range's tombstone always reaches the node before a task that writes the range again.
     */
    record TakeDiskWork(String clientId, int max, long freedAck) implements Command<DiskWork> {
    }

    /** A range freed on a node's disk segment: its {@code seq} (what the node confirms), offset and length. */
    record Freed(long seq, long offset, long length) {
    }

    /** The answer of {@link TakeDiskWork}: ranges to forget first, then tasks. */
    record DiskWork(List<Freed> freed, List<OffloadTask> tasks) {
        public static final DiskWork NONE = new DiskWork(List.of(), List.of());
    }

    /** A node reports offloads it finished: durable with this CRC32C, or failed. */
    record OffloadDone(String clientId, List<OffloadResult> results) implements Command<Void> {
        public OffloadDone {
            results = List.copyOf(results);
        }
    }

    /**
     * Copy {@code size} bytes of {@code key} from {@code source} (the node's memory) to {@code target} (its disk), make
     * them durable and report their CRC32C, within {@code ttlNanos} of receiving this; with {@code promote}, the other
     * way (source its disk, with the CRC32C to check, target its memory); with {@code repair}, from a live memory
     * replica on any node ({@code source}) into the node's own memory ({@code target}), reporting the CRC32C copied.
     */
    record OffloadTask(long taskId, String key, long size, ReplicaLocation source, ReplicaLocation target, long ttlNanos,
                       boolean promote, boolean repair, long putId) {
    }

    /**
     * A node's scrub found these disk replicas of its segment {@code segmentId} not matching their CRC32C (each named by
     * key and offset in the segment): each is dropped, and an object left with no replica is gone. A replica that is no
     * longer at that offset (replaced, removed) is left alone.
     */
    record DropDiskReplicas(String clientId, String segmentId, List<DiskReplica> replicas) implements Command<Integer> {
        public DropDiskReplicas {
            replicas = List.copyOf(replicas);
        }
    }

    /** A disk replica: the object's key, its offset in the disk segment, its size and recorded CRC32C. */
    record DiskReplica(String key, long offset, long size, long crc32c) {
    }

    /**
     * A restarted node's disk index, reported after it mounted its disk segment {@code segmentId} again: each replica is
     * adopted where its key has no object (a new disk-only object) or the object with that put id and size (it gets
     * this disk replica); the rest are refused and answered by offset, so the node forgets them.
     */
    record AdoptDiskReplicas(String clientId, String segmentId, List<Adopted> replicas) implements Command<List<Long>> {
        public AdoptDiskReplicas {
            replicas = List.copyOf(replicas);
        }
    }

    /** A disk replica a node's index holds: key, offset in its disk segment, size, CRC32C and put id recorded at offload. */
    record Adopted(String key, long offset, long size, long crc32c, long putId) {
    }

    /** How an offload ended: {@code ok} with the bytes' CRC32C (unsigned 32 bits), or failed for {@code error}. */
    record OffloadResult(long taskId, boolean ok, long crc32c, String error) {
    }

    /** A put's reservation: the id to end or revoke it with and where to write each replica. */
    record PutTicket(long putId, List<ReplicaLocation> replicas) {
    }

    /** A read's answer: the object's size, its readable replicas, and how long the lease granted lasts. */
    record ReplicaList(long size, List<ReplicaLocation> replicas, Duration leaseTtl) {
    }

    enum ClientStatus { OK, NEED_REMOUNT }

    record TickReport(List<String> clientsExpired, int putsReclaimed, long evictedObjects, long evictedBytes) {
    }

    /**
     * {@code command} sent with a request id (the client's id and its sequence number): applied once, and a request
     * sent again with the same id answered as the first time ({@link RequestIds}). Only the commands a client may
     * send again after losing an answer are wrapped: put start, end and revoke (single or a batch's items), commit,
     * remove (single or a batch's items), removal of keys (what a regex matched) or of all, mount, unmount, leave.
     */
    record Once<R>(String clientId, long seq, Command<R> command) implements Command<R> {
        public Once {
            if (!(command instanceof PutStart || command instanceof PutEnd || command instanceof PutRevoke
                    || command instanceof Commit || command instanceof Remove || command instanceof RemoveKeys
                    || command instanceof RemoveAll || command instanceof Mount || command instanceof Unmount
                    || command instanceof Leave)) {
                throw new IllegalArgumentException("a request id is not carried by " + command.getClass().getSimpleName());
            }
        }
    }
}

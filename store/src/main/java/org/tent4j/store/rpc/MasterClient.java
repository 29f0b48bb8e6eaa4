package org.tent4j.store.rpc;

import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import org.tent4j.store.PrintableId;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.proto.BatchPutEndRequest;
import org.tent4j.store.proto.BatchPutStartRequest;
import org.tent4j.store.proto.BatchRemoveRequest;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.CommitRequest;
import org.tent4j.store.proto.CommitResponse;
import org.tent4j.store.proto.Empty;
import org.tent4j.store.proto.ExistResponse;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.LeaveRequest;
import org.tent4j.store.proto.MountChallengeResponse;
import org.tent4j.store.proto.MountRequest;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.DiskReplica;
import org.tent4j.store.proto.DiskReplicasRequest;
import org.tent4j.store.proto.DiskReplicasResponse;
import org.tent4j.store.proto.DropDiskReplicasRequest;
import org.tent4j.store.proto.AdoptDiskReplicasRequest;
import org.tent4j.store.proto.AdoptDiskReplicasResponse;
import org.tent4j.store.proto.OffloadResult;
import org.tent4j.store.proto.OffloadTask;
import org.tent4j.store.proto.OffloadsRequest;
import org.tent4j.store.proto.OffloadsResponse;
import org.tent4j.store.proto.PingRequest;
import org.tent4j.store.proto.PingResponse;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.RegisterResponse;
import org.tent4j.store.proto.RemoveAllRequest;
import org.tent4j.store.proto.RemoveByRegexRequest;
import org.tent4j.store.proto.RemoveRequest;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.Status;
import org.tent4j.store.proto.UnmountRequest;

/**
 * The master's RPCs from a client: the hot ones (puts, replica lists, exists) over one long-lived Calls stream, the
 * rest unary ({@link MasterConnection}: each call has a timeout, transport failures are {@link StoreException}s
 * naming the master). Calls follow the leader ({@link LeaderFollowing}); every mutation that may be sent again
 * carries a request id, so the master answers a repeat rather than apply it twice. Batch calls return per-item
 * messages whose status the caller checks. Internal: it speaks the generated protobuf
 * types, which the public client API ({@code org.tent4j.store.client}) never shows.
 */
public final class MasterClient implements AutoCloseable {
    /** The masters named at construction, in order, and how calls follow the leader among them. */
    private final LeaderFollowing following;
    /** The master calls go to now. */
    private final MasterConnection conn;
    /** Request ids of this client's mutations (with its client id): a resent one is answered, not applied again. */
    private final AtomicLong requests = new AtomicLong();
    private volatile String clientId;

    /** A client of a master that asks for no token. */
    public MasterClient(String address, Duration timeout) {
        this(address, timeout, StoreSecurity.NONE);
    }

    /**
     * A client proving {@code security}'s tokens on every call (and speaking its TLS). {@code addresses} is one
     * master's {@code host:port}, or the masters of a group separated by commas: calls go to the leader, found and
     * followed as {@link #follow} says.
     */
    public MasterClient(String addresses, Duration timeout, StoreSecurity security) {
        List<String> masters = LeaderFollowing.parse(addresses);
        this.conn = new MasterConnection(masters.getFirst(), timeout, security);
        this.following = new LeaderFollowing(masters, timeout, conn::address, conn::moveTo);
    }

    /** See {@link LeaderFollowing#follow}. */
    private <T> T follow(String what, boolean repeatable, Supplier<T> attempt) {
        return following.follow(what, repeatable, attempt);
    }

    /**
     * Asks the master for a client id and its credential, which every later call carries; the id. Calls already on
     * the Calls stream finish there, later ones go on a new stream that carries the new credential.
     */
    public String register() {
        RegisterResponse r = follow("Register", true, () -> {
            RegisterResponse a = conn.call("Register", () -> conn.stub().register(Empty.getDefaultInstance()));
            Wire.check(a.getStatus());
            return a;
        });
        PrintableId.require("client id issued by master " + conn.address(), r.getClientId());
        conn.session(r.getClientId() + ":" + HexFormat.of().formatHex(r.getCredential().toByteArray()));
        clientId = r.getClientId();
        return clientId;
    }

    /** The id {@link #register} got; null before. */
    public String clientId() {
        return clientId;
    }

    public String address() {
        return conn.address();
    }

    public String serviceReady() {
        return follow("ServiceReady", true, () -> conn.call("ServiceReady", () -> conn.stub().serviceReady(Empty.getDefaultInstance()).getVersion()));
    }

    /** Whether the master wants this client to mount its segments again. */
    public boolean ping(String clientId, long leaseExpiredReads, long checksumFailures) {
        return follow("Ping", true, () -> {
            PingResponse r = conn.call("Ping", () -> conn.stub().ping(PingRequest.newBuilder().setClientId(clientId)
                    .setLeaseExpiredReads(leaseExpiredReads).setChecksumFailures(checksumFailures).build()));
            Wire.check(r.getStatus());
            return r.getNeedRemount();
        });
    }

    /** The bytes to write at {@code segment}'s base before {@link #mount}; empty when the master checks no mounts. */
    public byte[] mountChallenge(String clientId, SegmentSpec segment) {
        return follow("MountChallenge", true, () -> {
            MountChallengeResponse r = conn.call("MountChallenge", () -> conn.stub().mountChallenge(MountRequest.newBuilder()
                    .setClientId(clientId).setSegment(Wire.segment(segment)).build()));
            Wire.check(r.getStatus());
            return r.getNonce().toByteArray();
        });
    }

    /** A page of the disk replicas on the client's disk segment (its scrub). */
    public List<DiskReplica> diskReplicas(String clientId, String segmentId, long from, int limit) {
        return follow("DiskReplicas", true, () -> {
            DiskReplicasResponse r = conn.call("DiskReplicas", () -> conn.stub().diskReplicas(DiskReplicasRequest.newBuilder()
                    .setClientId(clientId).setSegmentId(segmentId).setFrom(from).setLimit(limit).build()));
            Wire.check(r.getStatus());
            return r.getReplicasList();
        });
    }

    /**
     * Reports what a restarted node's disk index holds on its (just mounted) disk segment; the offsets the master
     * refused. Sent again after a break: adopting a replica twice is harmless.
     */
    public List<Long> adoptDiskReplicas(String clientId, String segmentId, List<DiskReplica> held) {
        return follow("AdoptDiskReplicas", true, () -> {
            AdoptDiskReplicasResponse r = conn.call("AdoptDiskReplicas", () -> conn.stub().adoptDiskReplicas(
                    AdoptDiskReplicasRequest.newBuilder().setClientId(clientId).setSegmentId(segmentId).addAllReplicas(held).build()));
            Wire.check(r.getStatus());
            return r.getRefusedOffsetsList();
        });
    }

    /** Drops disk replicas the scrub found corrupt; how many were still there. */
    public long dropDiskReplicas(String clientId, String segmentId, List<DiskReplica> bad) {
        return follow("DropDiskReplicas", false, () -> {
            CountResponse r = conn.call("DropDiskReplicas", () -> conn.stub().dropDiskReplicas(DropDiskReplicasRequest.newBuilder()
                    .setClientId(clientId).setSegmentId(segmentId).addAllReplicas(bad).build()));
            Wire.check(r.getStatus());
            return r.getCount();
        });
    }

    /** Reports finished offloads and takes up to {@code max} waiting ones. */
    public OffloadsResponse offloads(String clientId, List<OffloadResult> results, int max, long freedAck) {
        // not resent after a broken call: tasks it took would be lost (they expire at the master and are handed again)
        return follow("Offloads", false, () -> {
            OffloadsResponse r = conn.call("Offloads", () -> conn.stub().offloads(OffloadsRequest.newBuilder().setClientId(clientId)
                    .addAllResults(results).setMax(max).setFreedAck(freedAck).build()));
            Wire.check(r.getStatus());
            return r;
        });
    }

    /** Mounts {@code segment} in this client's {@code incarnation} (new on each start of it, never 0). */
    public void mount(String clientId, SegmentSpec segment, long incarnation) {
        MountRequest req = MountRequest.newBuilder().setClientId(clientId).setSegment(Wire.segment(segment))
                .setRequestSeq(requests.incrementAndGet()).setIncarnation(incarnation).build();
        once("MountSegment", () -> conn.call("MountSegment", () -> conn.stub().mountSegment(req)));
    }

    public void unmount(String clientId, String segmentId) {
        UnmountRequest req = UnmountRequest.newBuilder().setClientId(clientId).setSegmentId(segmentId)
                .setRequestSeq(requests.incrementAndGet()).build();
        once("UnmountSegment", () -> conn.call("UnmountSegment", () -> conn.stub().unmountSegment(req)));
    }

    /** Tells the master this client is closing cleanly (it is then never counted as expired). */
    public void leave(String clientId) {
        LeaveRequest req = LeaveRequest.newBuilder().setClientId(clientId).setRequestSeq(requests.incrementAndGet()).build();
        once("Leave", () -> conn.call("Leave", () -> conn.stub().leave(req)));
    }

    /** A mutation carrying a request id: sent again to the next master as well, as it is applied at most once. */
    private void once(String what, Supplier<Status> rpc) {
        follow(what, true, () -> {
            Wire.check(rpc.get());
            return null;
        });
    }

    /** {@code req} with a new request id unless it carries one (a caller resending it keeps its id). */
    private PutStartRequest withId(PutStartRequest req) {
        return req.getRequestSeq() != 0 ? req : req.toBuilder().setRequestSeq(requests.incrementAndGet()).build();
    }

    /** As above, for a put's end or revoke. */
    private PutEndRequest withId(PutEndRequest req) {
        return req.getRequestSeq() != 0 ? req : req.toBuilder().setRequestSeq(requests.incrementAndGet()).build();
    }

    /**
     * The request id of a call the master keys by the credential's client (removals), or 0 (none) before this
     * client registered: such a call is then not deduplicated, so not sent again once it may have applied.
     */
    private long credentialRequest(int count) {
        return conn.registered() ? requests.getAndAdd(count) + 1 : 0;
    }

    /**
     * Throws the {@code NOT_LEADER} a batch's items carry when its entry was refused by a master that lost its term
     * (every item then carries it, and nothing was applied), so {@link #follow} sends the batch to the leader.
     */
    private static <T> T leaderOrThrow(T answer, List<Status> items) {
        if (!items.isEmpty() && items.stream().allMatch(i -> i.getCode() == StoreError.NOT_LEADER.code())) {
            Wire.check(items.getFirst());
        }
        return answer;
    }

    public static PutStartRequest putStartRequest(String clientId, String key, long size, ReplicateConfig cfg, String host, boolean upsert) {
        return PutStartRequest.newBuilder().setClientId(clientId).setKey(key).setSize(size).setConfig(Wire.config(cfg))
                .setWriterHost(host).setUpsert(upsert).build();
    }

    public PutStartResponse putStart(PutStartRequest request) {
        PutStartRequest req = withId(request);
        return follow("PutStart", true, () -> {
            PutStartResponse r = conn.exchange("PutStart", Call.newBuilder().setPutStart(req)).getPutStart();
            Wire.check(r.getStatus());
            return r;
        });
    }

    /** Every item carries a request id (its own kept), so a batch that broke with its master is sent again. */
    /** The highest Raft term the masters' answers carried so far (0: masters without a durable log). */
    public long term() {
        return conn.term();
    }

    public List<PutStartResponse> batchPutStart(List<PutStartRequest> requests) {
        List<PutStartRequest> reqs = requests.stream().map(this::withId).toList();
        return follow("BatchPutStart", true, () -> {
            List<PutStartResponse> r = conn.exchange("BatchPutStart", Call.newBuilder().setBatchPutStart(
                    BatchPutStartRequest.newBuilder().addAllItems(reqs))).getBatchPutStart().getItemsList();
            return leaderOrThrow(r, r.stream().map(PutStartResponse::getStatus).toList());
        });
    }

    public void putEnd(String clientId, String key, long putId) {
        PutEndRequest req = withId(endRequest(clientId, key, putId));
        once("PutEnd", () -> conn.exchange("PutEnd", Call.newBuilder().setPutEnd(req)).getStatus());
    }

    public void putRevoke(String clientId, String key, long putId) {
        PutEndRequest req = withId(endRequest(clientId, key, putId));
        once("PutRevoke", () -> conn.exchange("PutRevoke", Call.newBuilder().setPutRevoke(req)).getStatus());
    }

    /** As {@link #batchPutStart}. */
    public List<Status> batchPutEnd(List<PutEndRequest> requests) {
        List<PutEndRequest> reqs = requests.stream().map(this::withId).toList();
        return follow("BatchPutEnd", true, () -> {
            List<Status> r = conn.exchange("BatchPutEnd", Call.newBuilder().setBatchPutEnd(BatchPutEndRequest.newBuilder()
                    .addAllItems(reqs))).getBatchStatus().getItemsList();
            return leaderOrThrow(r, r);
        });
    }

    /** As {@link #batchPutStart}. */
    public List<Status> batchPutRevoke(List<PutEndRequest> requests) {
        List<PutEndRequest> reqs = requests.stream().map(this::withId).toList();
        return follow("BatchPutRevoke", true, () -> {
            List<Status> r = conn.exchange("BatchPutRevoke", Call.newBuilder().setBatchPutRevoke(BatchPutEndRequest.newBuilder()
                    .addAllItems(reqs))).getBatchStatus().getItemsList();
            return leaderOrThrow(r, r);
        });
    }

    /** Commits puts into reservations, retires and refills reservations: one round trip. */
    public CommitResponse commit(CommitRequest request) {
        CommitRequest req = request.toBuilder().setRequestSeq(requests.incrementAndGet()).build();
        return follow("Commit", true, () -> {
            CommitResponse r = conn.exchange("Commit", Call.newBuilder().setCommit(req)).getCommit();
            if (r.getRefillStatus().getCode() == StoreError.NOT_LEADER.code()) {
                // a commit refused as a whole carries its reason as the refill status, and an applied one never says
                // NOT_LEADER: follow the leader with the same request id. Taken for a refusal of the items instead, the
                // put would be placed again while the entry may still be applied by the new leader (its first answer
                // lost with the old one), and answered ALREADY_EXISTS for its own value
                Wire.check(r.getRefillStatus());
            }
            return leaderOrThrow(r, r.getItemsList());
        });
    }

    public static PutEndRequest endRequest(String clientId, String key, long putId) {
        return PutEndRequest.newBuilder().setClientId(clientId).setKey(key).setPutId(putId).build();
    }

    public ReplicaListResponse getReplicaList(String key) {
        return follow("GetReplicaList", true, () -> {
            ReplicaListResponse r = conn.exchange("GetReplicaList", Call.newBuilder().setGetReplicaList(
                    KeyRequest.newBuilder().setKey(key))).getReplicaList();
            Wire.check(r.getStatus());
            return r;
        });
    }

    /** Replica lists of {@code keys}, in order, each segment named once in the answer (checked: {@link SegmentTable#decode}). */
    public SegmentTable.Decoded batchGetReplicaList(List<String> keys) {
        return follow("BatchGetReplicaList", true, () -> {
            var answer = conn.exchange("BatchGetReplicaList", Call.newBuilder().setBatchGetReplicaList(
                    KeysRequest.newBuilder().addAllKeys(keys).setSegmentTable(true))).getBatchReplicaList();
            leaderOrThrow(null, answer.getItemsList().stream().map(ReplicaListResponse::getStatus).toList());
            return SegmentTable.decode(answer, keys, conn.address());
        });
    }

    public boolean exists(String key) {
        return follow("Exist", true, () -> {
            ExistResponse r = conn.exchange("Exist", Call.newBuilder().setExist(KeyRequest.newBuilder().setKey(key))).getExist();
            Wire.check(r.getStatus());
            return r.getExists();
        });
    }

    public List<ExistResponse> batchExists(List<String> keys) {
        return follow("BatchExist", true, () -> conn.exchange("BatchExist", Call.newBuilder().setBatchExist(
                KeysRequest.newBuilder().addAllKeys(keys))).getBatchExist().getItemsList());
    }

    public long size(String key) {
        return follow("Size", true, () -> {
            var r = conn.call("Size", () -> conn.stub().size(KeyRequest.newBuilder().setKey(key).build()));
            Wire.check(r.getStatus());
            return r.getSize();
        });
    }

    public void remove(String key, boolean force) {
        long seq = credentialRequest(1);
        RemoveRequest req = RemoveRequest.newBuilder().setKey(key).setForce(force).setRequestSeq(seq).build();
        follow("Remove", seq != 0, () -> {
            Wire.check(conn.call("Remove", () -> conn.stub().remove(req)));
            return null;
        });
    }

    /** The i-th key carries the i-th of as many consecutive request ids (none before this client registered). */
    public List<Status> batchRemove(List<String> keys, boolean force) {
        long first = credentialRequest(keys.size());
        BatchRemoveRequest req = BatchRemoveRequest.newBuilder().addAllKeys(keys).setForce(force)
                .setFirstRequestSeq(first).build();
        return follow("BatchRemove", first != 0, () -> {
            List<Status> r = conn.call("BatchRemove", () -> conn.stub().batchRemove(req)).getItemsList();
            return leaderOrThrow(r, r);
        });
    }

    /** Sent again with its request id: a repeat answers the count the first one removed. */
    public long removeByRegex(String regex, boolean force) {
        long seq = credentialRequest(1);
        RemoveByRegexRequest req = RemoveByRegexRequest.newBuilder().setRegex(regex).setForce(force).setRequestSeq(seq).build();
        return follow("RemoveByRegex", seq != 0, () -> {
            var r = conn.call("RemoveByRegex", () -> conn.stub().removeByRegex(req));
            Wire.check(r.getStatus());
            return r.getCount();
        });
    }

    /** As {@link #removeByRegex}. */
    public long removeAll(boolean force) {
        long seq = credentialRequest(1);
        RemoveAllRequest req = RemoveAllRequest.newBuilder().setForce(force).setRequestSeq(seq).build();
        return follow("RemoveAll", seq != 0, () -> {
            var r = conn.call("RemoveAll", () -> conn.stub().removeAll(req));
            Wire.check(r.getStatus());
            return r.getCount();
        });
    }

    @Override
    public void close() {
        conn.close();
    }
}

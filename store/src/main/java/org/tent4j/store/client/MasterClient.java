package org.tent4j.store.client;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.proto.BatchPutEndRequest;
import org.tent4j.store.proto.BatchPutStartRequest;
import org.tent4j.store.proto.BatchRemoveRequest;
import org.tent4j.store.proto.Empty;
import org.tent4j.store.proto.ExistResponse;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.MountRequest;
import org.tent4j.store.proto.PingRequest;
import org.tent4j.store.proto.PingResponse;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.RemoveAllRequest;
import org.tent4j.store.proto.RemoveByRegexRequest;
import org.tent4j.store.proto.RemoveRequest;
import org.tent4j.store.proto.ReplicaListResponse;
import org.tent4j.store.proto.Status;
import org.tent4j.store.proto.UnmountRequest;
import org.tent4j.store.rpc.MasterServer;
import org.tent4j.store.rpc.Wire;

/**
 * The master's RPCs from a client: each call has a deadline, and transport failures become {@link StoreException}s
 * naming the master ({@link StoreError#RPC_FAIL} when unreachable, {@link StoreError#RPC_TIMEOUT} past the deadline).
 * Batch calls return per-item messages whose status the caller checks.
 */
public final class MasterClient implements AutoCloseable {
    private final String address;
    private final ManagedChannel channel;
    private final MasterGrpc.MasterBlockingStub stub;
    private final Duration timeout;

    public MasterClient(String address, Duration timeout) {
        this.address = address;
        this.timeout = timeout;
        // no retries: the client decides what to retry (a failed RPC is an error naming the master), and the retry
        // machinery costs every call a buffering wrapper
        this.channel = NettyChannelBuilder.forTarget(address).usePlaintext().disableRetry()
                .maxInboundMessageSize(MasterServer.MAX_MESSAGE_BYTES).build();
        this.stub = MasterGrpc.newBlockingStub(channel);
    }

    public String address() {
        return address;
    }

    private MasterGrpc.MasterBlockingStub stub() {
        return stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    private <T> T call(String what, Supplier<T> rpc) {
        try {
            return rpc.get();
        } catch (StatusRuntimeException e) {
            io.grpc.Status.Code code = e.getStatus().getCode();
            String detail = e.getStatus().getDescription() == null ? code.toString() : e.getStatus().getDescription();
            if (code == io.grpc.Status.Code.DEADLINE_EXCEEDED) {
                throw new StoreException(StoreError.RPC_TIMEOUT, what + " to master " + address + " got no answer within " + timeout.toMillis() + " ms", e);
            }
            if (code == io.grpc.Status.Code.INVALID_ARGUMENT) {
                throw new StoreException(StoreError.INVALID_PARAMS, what + " refused by master " + address + ": " + detail, e);
            }
            throw new StoreException(StoreError.RPC_FAIL, what + " to master " + address + " failed (" + code
                    + (code == io.grpc.Status.Code.UNAVAILABLE ? ", master unreachable" : "") + "): " + detail, e);
        }
    }

    public String serviceReady() {
        return call("ServiceReady", () -> stub().serviceReady(Empty.getDefaultInstance()).getVersion());
    }

    /** Whether the master wants this client to mount its segments again. */
    public boolean ping(String clientId, long leaseExpiredReads) {
        PingResponse r = call("Ping", () -> stub().ping(PingRequest.newBuilder().setClientId(clientId)
                .setLeaseExpiredReads(leaseExpiredReads).build()));
        Wire.check(r.getStatus());
        return r.getNeedRemount();
    }

    public void mount(String clientId, SegmentSpec segment) {
        Wire.check(call("MountSegment", () -> stub().mountSegment(MountRequest.newBuilder().setClientId(clientId)
                .setSegment(Wire.segment(segment)).build())));
    }

    public void unmount(String clientId, String segmentId) {
        Wire.check(call("UnmountSegment", () -> stub().unmountSegment(UnmountRequest.newBuilder().setClientId(clientId)
                .setSegmentId(segmentId).build())));
    }

    static PutStartRequest putStartRequest(String clientId, String key, long size, ReplicateConfig cfg, String host, boolean upsert) {
        return PutStartRequest.newBuilder().setClientId(clientId).setKey(key).setSize(size).setConfig(Wire.config(cfg))
                .setWriterHost(host).setUpsert(upsert).build();
    }

    public PutStartResponse putStart(PutStartRequest req) {
        PutStartResponse r = call("PutStart", () -> stub().putStart(req));
        Wire.check(r.getStatus());
        return r;
    }

    public List<PutStartResponse> batchPutStart(List<PutStartRequest> reqs) {
        return call("BatchPutStart", () -> stub().batchPutStart(BatchPutStartRequest.newBuilder().addAllItems(reqs).build())).getItemsList();
    }

    public void putEnd(String clientId, String key, long putId) {
        Wire.check(call("PutEnd", () -> stub().putEnd(endRequest(clientId, key, putId))));
    }

    public void putRevoke(String clientId, String key, long putId) {
        Wire.check(call("PutRevoke", () -> stub().putRevoke(endRequest(clientId, key, putId))));
    }

    public List<Status> batchPutEnd(List<PutEndRequest> reqs) {
        return call("BatchPutEnd", () -> stub().batchPutEnd(BatchPutEndRequest.newBuilder().addAllItems(reqs).build())).getItemsList();
    }

    public List<Status> batchPutRevoke(List<PutEndRequest> reqs) {
        return call("BatchPutRevoke", () -> stub().batchPutRevoke(BatchPutEndRequest.newBuilder().addAllItems(reqs).build())).getItemsList();
    }

    static PutEndRequest endRequest(String clientId, String key, long putId) {
        return PutEndRequest.newBuilder().setClientId(clientId).setKey(key).setPutId(putId).build();
    }

    public ReplicaListResponse getReplicaList(String key) {
        ReplicaListResponse r = call("GetReplicaList", () -> stub().getReplicaList(KeyRequest.newBuilder().setKey(key).build()));
        Wire.check(r.getStatus());
        return r;
    }

    public List<ReplicaListResponse> batchGetReplicaList(List<String> keys) {
        return call("BatchGetReplicaList", () -> stub().batchGetReplicaList(KeysRequest.newBuilder().addAllKeys(keys).build())).getItemsList();
    }

    public boolean exists(String key) {
        ExistResponse r = call("Exist", () -> stub().exist(KeyRequest.newBuilder().setKey(key).build()));
        Wire.check(r.getStatus());
        return r.getExists();
    }

    public List<ExistResponse> batchExists(List<String> keys) {
        return call("BatchExist", () -> stub().batchExist(KeysRequest.newBuilder().addAllKeys(keys).build())).getItemsList();
    }

    public long size(String key) {
        var r = call("Size", () -> stub().size(KeyRequest.newBuilder().setKey(key).build()));
        Wire.check(r.getStatus());
        return r.getSize();
    }

    public void remove(String key, boolean force) {
        Wire.check(call("Remove", () -> stub().remove(RemoveRequest.newBuilder().setKey(key).setForce(force).build())));
    }

    public List<Status> batchRemove(List<String> keys, boolean force) {
        return call("BatchRemove", () -> stub().batchRemove(BatchRemoveRequest.newBuilder().addAllKeys(keys).setForce(force).build())).getItemsList();
    }

    public long removeByRegex(String regex, boolean force) {
        var r = call("RemoveByRegex", () -> stub().removeByRegex(RemoveByRegexRequest.newBuilder().setRegex(regex).setForce(force).build()));
        Wire.check(r.getStatus());
        return r.getCount();
    }

    public long removeAll(boolean force) {
        var r = call("RemoveAll", () -> stub().removeAll(RemoveAllRequest.newBuilder().setForce(force).build()));
        Wire.check(r.getStatus());
        return r.getCount();
    }

    @Override
    public void close() {
        channel.shutdownNow();
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import org.tent4j.store.StoreError;
import org.tent4j.store.proto.Answer;
import org.tent4j.store.proto.Call;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.KeysRequest;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.SizeResponse;
import org.tent4j.store.proto.Status;

/**
 * For {@link DeposedLeaderTest}: reads of one master over a channel pinned to it, of a key that exists with a known
 * size on the group's current leader and of one that does not: the reads it answers without a log entry (Size, Exist,
 * BatchExist) and replica lists (GetReplicaList, a log entry). The stream calls go over a Calls stream opened while the
 * master led (as a client's long-lived stream is), so the follower gate, which checks a call when it starts, does not
 * see them. Each read must come back refused {@code NOT_LEADER} (an answer's status, or the gate's
 * {@code FAILED_PRECONDITION}) or right; an answer from a state the group has moved past fails the test, naming it.
 */
final class StaleReads {
    private final MasterGrpc.MasterStub stub;
    private final StreamObserver<Call> calls;
    private final Map<Long, CompletableFuture<Answer>> answers = new ConcurrentHashMap<>();
    private final CompletableFuture<Throwable> streamEnded = new CompletableFuture<>();
    private final AtomicLong ids = new AtomicLong();
    private final List<String> names = new ArrayList<>();
    /** Per read: null when refused NOT_LEADER, "right" when answered right, else what was wrong. */
    private final List<CompletableFuture<String>> outcomes = new ArrayList<>();

    /** Opens the Calls stream and waits until the master answered an Exist of {@code existing} on it. */
    StaleReads(ManagedChannel channel, Metadata credential, String existing) throws Exception {
        stub = MasterGrpc.newStub(channel).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(credential));
        calls = stub.withDeadlineAfter(5, TimeUnit.MINUTES).calls(new StreamObserver<>() {
            @Override
            public void onNext(Answer a) {
                answers.computeIfAbsent(a.getId(), id -> new CompletableFuture<>()).complete(a);
            }

            @Override
            public void onError(Throwable t) {
                streamEnded.complete(t);
                answers.values().forEach(f -> f.completeExceptionally(t));
            }

            @Override
            public void onCompleted() {
                streamEnded.complete(null);
            }
        });
        Answer first = call(Call.newBuilder().setExist(KeyRequest.newBuilder().setKey(existing))).get(30, TimeUnit.SECONDS);
        assertEquals(true, first.getExist().getExists(), "the master opened the stream on: " + first);
    }

    /** Sends one round of reads of {@code present} (of {@code size} bytes) and {@code absent}; see {@link #assertNoneStale}. */
    void send(String present, long size, String absent) {
        size(present, size);
        size(absent, -1);
        read("Exist " + present, Call.newBuilder().setExist(KeyRequest.newBuilder().setKey(present)),
                a -> verdict(a.getExist().getStatus(), () -> a.getExist().getExists() ? "right" : "says it does not exist"));
        read("Exist " + absent, Call.newBuilder().setExist(KeyRequest.newBuilder().setKey(absent)),
                a -> verdict(a.getExist().getStatus(), () -> a.getExist().getExists() ? "says it exists" : "right"));
        read("BatchExist [" + present + ", " + absent + "]",
                Call.newBuilder().setBatchExist(KeysRequest.newBuilder().addKeys(present).addKeys(absent)), a -> {
                    var items = a.getBatchExist().getItemsList();
                    if (items.size() != 2) {
                        return "answered " + items.size() + " items: " + a;
                    }
                    String first = verdict(items.get(0).getStatus(),
                            () -> items.get(0).getExists() ? "right" : "says " + present + " does not exist");
                    String second = verdict(items.get(1).getStatus(),
                            () -> items.get(1).getExists() ? "says " + absent + " exists" : "right");
                    return wrong(first) ? first : wrong(second) ? second : first == null && second == null ? null : "right";
                });
        read("GetReplicaList " + present, Call.newBuilder().setGetReplicaList(KeyRequest.newBuilder().setKey(present)),
                a -> verdict(a.getReplicaList().getStatus(), () -> a.getReplicaList().getSize() == size
                        && a.getReplicaList().getReplicasCount() > 0 ? "right" : "answered " + a.getReplicaList()));
        read("GetReplicaList " + absent, Call.newBuilder().setGetReplicaList(KeyRequest.newBuilder().setKey(absent)),
                a -> notFound(a.getReplicaList().getStatus(), "answered " + a.getReplicaList()));
    }

    private void size(String key, long expected) {
        CompletableFuture<String> outcome = new CompletableFuture<>();
        names.add("Size " + key);
        outcomes.add(outcome);
        stub.withDeadlineAfter(30, TimeUnit.SECONDS).size(KeyRequest.newBuilder().setKey(key).build(), new StreamObserver<>() {
            @Override
            public void onNext(SizeResponse s) {
                outcome.complete(expected < 0 ? notFound(s.getStatus(), "answered size " + s.getSize())
                        : verdict(s.getStatus(), () -> s.getSize() == expected ? "right" : "answered size " + s.getSize()));
            }

            @Override
            public void onError(Throwable t) {
                outcome.complete(gate(t));
            }

            @Override
            public void onCompleted() {
            }
        });
    }

    private CompletableFuture<Answer> call(Call.Builder call) {
        long id = ids.incrementAndGet();
        CompletableFuture<Answer> answer = answers.computeIfAbsent(id, i -> new CompletableFuture<>());
        streamEnded.thenAccept(t -> answer.completeExceptionally(t == null ? new IllegalStateException(
                "the stream ended without answering call " + id) : t));
        calls.onNext(call.setId(id).build());
        return answer;
    }

    private void read(String name, Call.Builder call, Function<Answer, String> check) {
        names.add(name);
        outcomes.add(call(call).handle((a, t) -> t != null ? gate(t)
                : a.hasRefused() ? "refused as a whole: " + a.getRefused() : check.apply(a)));
    }

    /** Null for NOT_LEADER, the check's verdict for OK, else the status named. */
    private static String verdict(Status s, Supplier<String> ok) {
        if (s.getCode() == StoreError.NOT_LEADER.code()) {
            return null;
        }
        return s.getCode() == 0 ? ok.get() : "answered " + s;
    }

    /** Null for NOT_LEADER, "right" for OBJECT_NOT_FOUND, else {@code otherwise} or the status named. */
    private static String notFound(Status s, String otherwise) {
        if (s.getCode() == StoreError.NOT_LEADER.code()) {
            return null;
        }
        return s.getCode() == StoreError.OBJECT_NOT_FOUND.code() ? "right" : s.getCode() == 0 ? otherwise : "answered " + s;
    }

    /** A call failed as a whole: null when the follower gate refused it NOT_LEADER. */
    private static String gate(Throwable t) {
        io.grpc.Status s = io.grpc.Status.fromThrowable(t);
        return s.getCode() == io.grpc.Status.Code.FAILED_PRECONDITION && String.valueOf(s.getDescription())
                .startsWith("NOT_LEADER") ? null : "failed " + s;
    }

    private static boolean wrong(String outcome) {
        return outcome != null && !outcome.equals("right");
    }

    /**
     * Waits for the outcome of every read sent since the last call: each refused NOT_LEADER or right, else fails naming
     * the reads that were not.
     */
    void assertNoneStale(String when, Duration within) throws Exception {
        long start = System.nanoTime();
        List<String> wrong = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        for (int i = 0; i < outcomes.size(); i++) {
            String o = outcomes.get(i).get(within.toMillis(), TimeUnit.MILLISECONDS);
            seen.add(names.get(i) + ": " + (o == null ? "NOT_LEADER" : o));
            if (wrong(o)) {
                wrong.add(names.get(i) + ": " + o);
            }
        }
        names.clear();
        outcomes.clear();
        System.out.println("reads sent to the deposed leader " + when + " (answered within "
                + (System.nanoTime() - start) / 1_000_000 + " ms of the wait): " + seen);
        assertEquals(List.of(), wrong, "the deposed leader answered reads sent " + when
                + " from a state the group has moved past");
    }

    /** Ends the stream (its calls are all answered by then). */
    void close() {
        calls.onCompleted();
    }
}

package org.tent4j.store.rpc;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import org.tent4j.store.master.DurableLog;
import org.tent4j.store.proto.MasterGrpc;

/**
 * A follower serves nothing but {@code ServiceReady}: every other call (reads included, which it could only answer
 * from a state that may lag the leader's) is closed {@code FAILED_PRECONDITION} with {@code NOT_LEADER} in its
 * description and the leader's store address in the {@link #LEADER} trailer when it knows it, before its message is
 * read, so it touches no state. {@link MasterClient} turns that into a {@link org.tent4j.store.NotLeaderException}
 * and follows the leader. The gate sees a call when it starts: a leader that loses its term while a call is in
 * flight, or while a client's Calls stream it admitted stays open, has that call's entry refused by its log, and a
 * read off the log refused by Ratis's read check ({@link DurableLog#awaitReadable}): both answer {@code NOT_LEADER} too.
 */
final class LeaderGate implements ServerInterceptor {
    /** The leader's store RPC address on a {@code NOT_LEADER} refusal. */
    static final Metadata.Key<String> LEADER = Metadata.Key.of("tent4j-store-leader", Metadata.ASCII_STRING_MARSHALLER);
    static final String NOT_LEADER = "NOT_LEADER";

    /** Null for a master in memory, which always serves. */
    private final DurableLog log;

    LeaderGate(DurableLog log) {
        this.log = log;
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
        if (log == null || call.getMethodDescriptor().equals(MasterGrpc.getServiceReadyMethod())) {
            return next.startCall(call, headers);
        }
        DurableLog.Role role = log.role();
        if (role.leader()) {
            return next.startCall(call, headers);
        }
        Metadata trailers = new Metadata();
        if (role.leaderRpc() != null) {
            trailers.put(LEADER, role.leaderRpc());
        }
        call.close(Status.FAILED_PRECONDITION.withDescription(NOT_LEADER + ": master " + log.id()
                + " is a follower (term " + role.term() + ") and serves no " + call.getMethodDescriptor().getBareMethodName()
                + (role.leaderId() == null ? "; it knows no leader now" : "; the leader is " + role.leaderId()
                + (role.leaderRpc() == null ? "" : " at " + role.leaderRpc()))), trailers);
        return new ServerCall.Listener<>() { };
    }
}

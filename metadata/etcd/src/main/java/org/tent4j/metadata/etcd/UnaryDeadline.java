package org.tent4j.metadata.etcd;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;

/**
 * Gives every unary etcd call a gRPC deadline of the store's operation timeout. jetcd waits for a ready channel without
 * one, so a put that timed out for the caller while etcd was down would otherwise stay queued and be applied whenever
 * etcd came back, possibly over a newer value. Streaming calls (watch) are left without a deadline.
 */
final class UnaryDeadline implements ClientInterceptor {
    private final long millis;

    UnaryDeadline(Duration timeout) {
        this.millis = timeout.toMillis();
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        CallOptions o = options;
        if (method.getType() == MethodDescriptor.MethodType.UNARY && o.getDeadline() == null) {
            o = o.withDeadlineAfter(millis, TimeUnit.MILLISECONDS);
        }
        return next.newCall(method, o);
    }
}

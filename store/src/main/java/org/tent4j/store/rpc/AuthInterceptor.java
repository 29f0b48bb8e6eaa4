package org.tent4j.store.rpc;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.concurrent.atomic.LongAdder;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.PrintableId;
import org.tent4j.store.StoreSecurity;

/**
 * The master's gate, run before any handler: a call without the right token proof is closed {@code UNAUTHENTICATED}
 * before its message is read, so it touches no state. A call that passes carries, in its {@link Context}, the client
 * its session credential proves ({@link #CLIENT}, null when it presents none or a wrong one) and whether it may run
 * admin operations ({@link #ADMIN}). {@link MasterService} checks both against what the call names.
 */
final class AuthInterceptor implements ServerInterceptor {
    private static final Logger LOG = LoggerFactory.getLogger(AuthInterceptor.class);
    /** The client id this call's credential proves; null if none. */
    static final Context.Key<String> CLIENT = Context.key("tent4j-store-client");
    /** Whether this call may remove in bulk by force. */
    static final Context.Key<Boolean> ADMIN = Context.key("tent4j-store-admin");

    private final byte[] tokenProof;
    private final byte[] adminProof;
    /** With no token at all the master is open, admin operations included; a token without an admin token closes them. */
    private final boolean open;
    private final ClientCredentials credentials;
    private final LongAdder refused;
    private final ConnectionGate gate;

    AuthInterceptor(StoreSecurity security, ClientCredentials credentials, RpcStats stats, ConnectionGate gate) {
        this.refused = stats.unauthenticated;
        this.gate = gate;
        String t = StoreAuth.tokenProof(security.token());
        String a = StoreAuth.adminProof(security.adminToken());
        this.tokenProof = t == null ? null : t.getBytes(StandardCharsets.US_ASCII);
        this.adminProof = a == null ? null : a.getBytes(StandardCharsets.US_ASCII);
        this.open = t == null && a == null;
        this.credentials = credentials;
    }

    /** Calls refused for a missing or wrong token. */
    long refused() {
        return refused.sum();
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
        if (tokenProof != null) {
            String presented = headers.get(StoreAuth.TOKEN);
            String why = presented == null ? "this store master requires a token and the call carried none (--token-file)"
                    : !matches(tokenProof, presented) ? "the token the call proved is not this store master's" : null;
            if (why != null) {
                refused.increment();
                long n = refused.sum();
                if (Long.bitCount(n) == 1) {
                    // first, second, fourth ... so a flood of strangers cannot fill the log
                    LOG.warn("refused {} from {}: {} ({} refused so far)", call.getMethodDescriptor().getBareMethodName(),
                            call.getAttributes().get(io.grpc.Grpc.TRANSPORT_ATTR_REMOTE_ADDR), why, n);
                }
                call.close(Status.UNAUTHENTICATED.withDescription(why), new Metadata());
                return new ServerCall.Listener<>() { };
            }
        }
        gate.proven(call.getAttributes().get(io.grpc.Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
        boolean admin = adminProof == null ? open : matches(adminProof, headers.get(StoreAuth.ADMIN));
        Context ctx = Context.current().withValues(CLIENT, client(headers.get(StoreAuth.CLIENT)), ADMIN, admin);
        return Contexts.interceptCall(ctx, call, headers, next);
    }

    private String client(String header) {
        if (header == null) {
            return null;
        }
        int colon = header.lastIndexOf(':');
        if (colon <= 0) {
            return null;
        }
        String id = header.substring(0, colon);
        try {
            // only an id the master could have issued: printable, short (and so never one that forges a log line)
            PrintableId.require("client id", id);
        } catch (org.tent4j.store.StoreException notAnId) {
            return null;
        }
        return credentials.verify(id, header.substring(colon + 1)) ? id : null;
    }

    private static boolean matches(byte[] expected, String presented) {
        return presented != null && MessageDigest.isEqual(expected, presented.getBytes(StandardCharsets.US_ASCII));
    }
}

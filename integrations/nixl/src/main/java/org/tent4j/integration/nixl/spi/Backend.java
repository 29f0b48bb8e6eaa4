package org.tent4j.integration.nixl.spi;

import java.util.List;
import java.util.concurrent.CompletionStage;

import org.tent4j.api.Opcode;
import org.tent4j.integration.nixl.Descriptor;
import org.tent4j.integration.nixl.MemoryType;
import org.tent4j.integration.nixl.NixlException;
import org.tent4j.integration.nixl.NixlStatus;

/**
 * One backend instance of an agent (NIXL's {@code nixlBackendEngine}). The agent does all bookkeeping of the objects a
 * backend returns (regions, remote regions, requests); the backend only moves bytes. Methods a backend's capabilities
 * do not call for default to refusing with NOT_SUPPORTED. Thread-safe.
 */
public interface Backend extends AutoCloseable {

    /** Registers one contiguous region of {@code type}; returns the backend's object for it. */
    Object register(Descriptor region, MemoryType type);

    void deregister(Object region);

    /** This backend's endpoint information for peers (remote backends). Asked each time metadata is generated. */
    default byte[] connectionInfo() {
        throw unsupported("connection info");
    }

    /** What a peer needs to address {@code region} (remote backends); may be empty. */
    default byte[] publicData(Object region) {
        throw unsupported("public data");
    }

    /** Remembers a peer's endpoint information; must not connect. A newer one replaces the older. */
    default void loadRemoteConnectionInfo(String agent, byte[] info) {
        throw unsupported("remote connection info");
    }

    /** Turns a peer's region and its public data into an object usable as a transfer target. */
    default Object loadRemote(String agent, Descriptor region, MemoryType type, byte[] publicData) {
        throw unsupported("remote metadata");
    }

    /** The loopback-target view of a local registration (local backends). */
    default Object loadLocal(Object region) {
        throw unsupported("loopback");
    }

    /** Forgets everything about {@code agent} and closes connections to it. */
    default void unloadRemote(String agent) {
    }

    /**
     * Prepares a request once: {@code local.get(i)} moves to or from {@code remote.get(i)} ({@code agent} is this
     * agent's own name for loopback). No data moves.
     */
    Object prepare(Opcode op, List<Span> local, List<Span> remote, String agent);

    /** Starts a prepared request without blocking; sends {@code notification} (if not null) after all its data. */
    void post(Object request, byte[] notification);

    Progress check(Object request);

    /**
     * Completes when the last post of {@code request} is terminal, so waiting callers need not poll; {@code null} if
     * the backend only progresses through {@link #check}.
     */
    default CompletionStage<?> completion(Object request) {
        return null;
    }

    /** Frees a request; if in flight, aborts it. Returns false if it cannot abort it yet (the agent reports an error). */
    boolean release(Object request);

    default List<BackendNotification> drainNotifications() {
        return List.of();
    }

    default void sendNotification(String agent, byte[] message) {
        throw unsupported("notifications");
    }

    @Override
    void close();

    private NixlException unsupported(String what) {
        return new NixlException(NixlStatus.NOT_SUPPORTED, getClass().getSimpleName() + " does not support " + what);
    }
}

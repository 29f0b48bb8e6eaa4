package org.tent4j.transport.netty;

import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.function.Consumer;

import io.netty.channel.Channel;

/**
 * Inbound connections that have not yet proven themselves (the token handshake, TLS) hold one of a fixed number of
 * slots of their own; when the slots are full, the oldest such connection is closed to make room. A connection is
 * counted against its listener's connection limit only once it has proven itself, so a flood of connections that
 * never do cannot lock out peers that do: each honest newcomer evicts the oldest silent one and finishes its
 * handshake long before it would be evicted in turn.
 */
public final class UnprovenConnections {
    private final int slots;
    private final Deque<Channel> waiting = new ConcurrentLinkedDeque<>();

    /** @param slots how many unproven connections may wait at once (the listener's connection limit) */
    public UnprovenConnections(int slots) {
        if (slots < 1) {
            throw new IllegalArgumentException("slots must be >= 1, got " + slots);
        }
        this.slots = slots;
    }

    /**
     * Holds {@code ch} until {@code proof} completes, then, on its event loop and if it is still open, hands it to
     * {@code proven}; when the slots are full, closes the oldest waiting connection after telling {@code evicted}.
     */
    public void await(Channel ch, CompletableFuture<?> proof, Consumer<Channel> proven, Consumer<Channel> evicted) {
        waiting.add(ch);
        ch.closeFuture().addListener(f -> waiting.remove(ch));
        while (waiting.size() > slots) {
            Channel oldest = waiting.poll();
            if (oldest != null && oldest != ch) {
                evicted.accept(oldest);
                oldest.close();
            }
        }
        proof.whenComplete((v, e) -> ch.eventLoop().execute(() -> {
            waiting.remove(ch);
            if (e == null && ch.isActive()) {
                proven.accept(ch);
            }
        }));
    }

    /** Connections waiting to prove themselves now. */
    public int waiting() {
        return waiting.size();
    }
}

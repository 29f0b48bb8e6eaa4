package org.tent4j.runtime;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Notification;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.runtime.control.ControlPlaneNode;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.SegmentDescriptor;

/**
 * Short messages between engines over the control plane ({@code engine.notify}): sent on their own or once every task
 * of a submit completed; received ones go to listeners first, then to a queue the application drains.
 */
final class Notifications {
    static final String SERVICE = "engine.notify";
    private static final Logger log = LoggerFactory.getLogger(Notifications.class);

    private final String segmentName;
    private final ControlPlaneNode control;
    /** Bounded: peers decide how many notifications arrive, the application how fast they are taken. */
    private final LinkedBlockingQueue<Notification> queue;
    private final List<Consumer<Notification>> listeners = new CopyOnWriteArrayList<>();

    Notifications(String segmentName, ControlPlaneNode control, OptionValues core) {
        this.segmentName = segmentName;
        this.control = control;
        int maxQueued = core.getInt(CoreKey.NOTIFICATIONS_MAX_QUEUED);
        if (maxQueued < 1) {
            throw new ConfigException(CoreKey.NOTIFICATIONS_MAX_QUEUED, "must be >= 1, got " + maxQueued);
        }
        this.queue = new LinkedBlockingQueue<>(maxQueued);
        control.serve(SERVICE, Notification.MAX_MESSAGE_BYTES, (caller, req) -> {
            deliver(new Notification(caller, new String(req, StandardCharsets.UTF_8)));
            return new byte[0];
        });
    }

    /** Sends {@code message} to an open segment (the caller checked it is open). */
    CompletableFuture<Void> send(RemoteSegment s, String message) {
        byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > Notification.MAX_MESSAGE_BYTES) {
            return CompletableFuture.failedFuture(new TransferException(ErrorCode.INVALID_ARGUMENT, "notification of " + bytes.length
                    + " bytes exceeds the limit of " + Notification.MAX_MESSAGE_BYTES));
        }
        if (s.isLocal()) {
            deliver(new Notification(segmentName, message));
            return CompletableFuture.completedFuture(null);
        }
        SegmentDescriptor d = s.descriptor();
        return control.callAsync(d.host(), d.controlPort(), SERVICE, bytes).thenApply(x -> null);
    }

    /** Sends a batch's notification; failures are logged, since no caller waits for it. */
    void sendQuietly(RemoteSegment s, String message) {
        try {
            send(s, message).whenComplete((v, e) -> {
                if (e != null) {
                    log.warn("notification to segment '{}' failed: {}", s.name(), e.getMessage());
                }
            });
        } catch (TransferException e) {
            log.warn("notification to segment '{}' failed: {}", s.name(), e.getMessage());
        }
    }

    private void deliver(Notification n) {
        // Listeners first: whoever waits on the queue may assume they have seen it.
        for (Consumer<Notification> l : listeners) {
            try {
                l.accept(n);
            } catch (RuntimeException e) {
                log.warn("notification listener failed: {}", e.toString());
            }
        }
        if (!queue.offer(n)) {
            log.warn("notification from '{}' dropped: {} notifications are waiting to be taken ({})", n.sender(),
                    queue.size(), CoreKey.NOTIFICATIONS_MAX_QUEUED);
        }
    }

    List<Notification> drain() {
        List<Notification> out = new ArrayList<>();
        queue.drainTo(out);
        return out;
    }

    Notification await(Duration timeout) throws InterruptedException {
        return queue.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    void listen(Consumer<Notification> listener) {
        listeners.add(listener);
    }
}

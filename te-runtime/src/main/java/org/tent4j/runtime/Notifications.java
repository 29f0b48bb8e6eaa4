package org.tent4j.runtime;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Notification;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.runtime.control.ControlPlaneNode;
import org.tent4j.runtime.control.RefusalLog;
import org.tent4j.runtime.metrics.EngineMetrics;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.SegmentDescriptor;

/**
 * Short messages between engines over the control plane ({@code engine.notify}): sent on their own or once every task
 * of a submit completed; received ones go to listeners first, then to a queue the application drains.
 */
public final class Notifications {
    static final String SERVICE = "engine.notify";
    private static final Logger log = LoggerFactory.getLogger(Notifications.class);

    private final String segmentName;
    private final ControlPlaneNode control;
    /** Bounded: peers decide how many notifications arrive, the application how fast they are taken. */
    private final LinkedBlockingQueue<Queued> queue;
    private final List<Consumer<Notification>> listeners = new CopyOnWriteArrayList<>();
    /**
     * Bytes of message text queued, overall and per sender: the count bound alone let 64 KiB messages fill 4 GiB, and
     * the per-sender share keeps one flooding peer from spending every other peer's room. Guarded by {@code this}.
     */
    private final long maxQueuedBytes;
    private final long maxQueuedBytesPerPeer;
    private long queuedBytes;
    private final Map<String, Long> queuedBytesBySender = new HashMap<>();
    private final LongAdder droppedForCount = new LongAdder();
    private final LongAdder droppedForPeerBytes = new LongAdder();
    private final LongAdder droppedForBytes = new LongAdder();

    /** A queued notification with the bytes it holds against the bounds. */
    private record Queued(Notification notification, long bytes) {
    }

    Notifications(String segmentName, ControlPlaneNode control, OptionValues core) {
        this.segmentName = segmentName;
        this.control = control;
        int maxQueued = core.getInt(CoreKey.NOTIFICATIONS_MAX_QUEUED);
        if (maxQueued < 1) {
            throw new ConfigException(CoreKey.NOTIFICATIONS_MAX_QUEUED, "must be >= 1, got " + maxQueued);
        }
        this.maxQueuedBytes = atLeastOneMessage(core, CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES);
        this.maxQueuedBytesPerPeer = atLeastOneMessage(core, CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES_PER_PEER);
        this.queue = new LinkedBlockingQueue<>(maxQueued);
        control.serve(SERVICE, Notification.MAX_MESSAGE_BYTES, (caller, req) -> {
            deliver(new Notification(caller, new String(req, StandardCharsets.UTF_8)), req.length);
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
            deliver(new Notification(segmentName, message), bytes.length);
            return CompletableFuture.completedFuture(null);
        }
        SegmentDescriptor d = s.descriptor();
        return control.callAsync(d.host(), d.controlPort(), SERVICE, bytes).thenApply(x -> null);
    }

    /** Sends a batch's notification; failures are logged, since no caller waits for it. */
    public void sendQuietly(RemoteSegment s, String message) {
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

    /** {@code bytes}: the message's length in UTF-8, as it arrived. */
    private void deliver(Notification n, long bytes) {
        // Listeners first: whoever waits on the queue may assume they have seen it.
        for (Consumer<Notification> l : listeners) {
            try {
                l.accept(n);
            } catch (RuntimeException e) {
                log.warn("notification listener failed: {}", e.toString());
            }
        }
        if (!reserve(n.sender(), bytes)) {
            return;
        }
        if (!queue.offer(new Queued(n, bytes))) {
            release(n.sender(), bytes);
            droppedForCount.increment();
            RefusalLog.warnSometimes(log, droppedForCount, "notification from '{}' dropped: {} notifications are waiting "
                    + "to be taken ({})", n.sender(), queue.size(), CoreKey.NOTIFICATIONS_MAX_QUEUED);
        }
    }

    /** Counts {@code bytes} against both byte bounds, or counts and logs the drop and answers false. */
    private boolean reserve(String sender, long bytes) {
        long peer;
        long total;
        synchronized (this) {
            peer = queuedBytesBySender.getOrDefault(sender, 0L);
            total = queuedBytes;
            if (peer + bytes <= maxQueuedBytesPerPeer && total + bytes <= maxQueuedBytes) {
                queuedBytesBySender.put(sender, peer + bytes);
                queuedBytes = total + bytes;
                return true;
            }
        }
        if (peer + bytes > maxQueuedBytesPerPeer) {
            droppedForPeerBytes.increment();
            RefusalLog.warnSometimes(log, droppedForPeerBytes, "notification from '{}' dropped: its {} bytes waiting to be "
                    + "taken reached {} ({})", sender, peer, maxQueuedBytesPerPeer, CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES_PER_PEER);
        } else {
            droppedForBytes.increment();
            RefusalLog.warnSometimes(log, droppedForBytes, "notification from '{}' dropped: {} bytes of all peers are "
                    + "waiting to be taken, at most {} ({})", sender, total, maxQueuedBytes, CoreKey.NOTIFICATIONS_MAX_QUEUED_BYTES);
        }
        return false;
    }

    private synchronized void release(String sender, long bytes) {
        queuedBytes -= bytes;
        // an idle sender keeps no entry, so the map holds at most the senders with something queued
        queuedBytesBySender.computeIfPresent(sender, (k, v) -> v - bytes <= 0 ? null : v - bytes);
    }

    private Notification taken(Queued q) {
        release(q.notification().sender(), q.bytes());
        return q.notification();
    }

    List<Notification> drain() {
        List<Queued> taken = new ArrayList<>();
        queue.drainTo(taken);
        List<Notification> out = new ArrayList<>(taken.size());
        for (Queued q : taken) {
            out.add(taken(q));
        }
        return out;
    }

    Notification await(Duration timeout) throws InterruptedException {
        Queued q = queue.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
        return q == null ? null : taken(q);
    }

    /** Bytes of message text (UTF-8) waiting to be taken. */
    synchronized long queuedBytes() {
        return queuedBytes;
    }

    /**
     * {@code tent4j_notifications_dropped_total{why="count|peer_bytes|bytes"}}: notifications dropped at
     * {@code notifications.max_queued}, {@code .max_queued_bytes_per_peer} and {@code .max_queued_bytes}.
     */
    void countDrops(EngineMetrics metrics) {
        String what = "notifications received and dropped because the application had not taken enough of them";
        metrics.count("tent4j.notifications.dropped", what, droppedForCount, LongAdder::sum, "why", "count");
        metrics.count("tent4j.notifications.dropped", what, droppedForPeerBytes, LongAdder::sum, "why", "peer_bytes");
        metrics.count("tent4j.notifications.dropped", what, droppedForBytes, LongAdder::sum, "why", "bytes");
    }

    long dropped() {
        return droppedForCount.sum() + droppedForPeerBytes.sum() + droppedForBytes.sum();
    }

    private static long atLeastOneMessage(OptionValues core, String key) {
        long v = core.getSize(key);
        if (v < Notification.MAX_MESSAGE_BYTES) {
            throw new ConfigException(key, "must be at least one largest notification (" + Notification.MAX_MESSAGE_BYTES
                    + " bytes), got " + v);
        }
        return v;
    }

    void listen(Consumer<Notification> listener) {
        listeners.add(listener);
    }
}

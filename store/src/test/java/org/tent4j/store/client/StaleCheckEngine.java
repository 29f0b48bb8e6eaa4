package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.tent4j.api.Batch;
import org.tent4j.api.Location;
import org.tent4j.api.Notification;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.SegmentInfo;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferStatus;
import org.tent4j.api.TransportInfo;

/**
 * A real engine whose next {@link #findRegistration} answers "registered" for any range ({@link #lieOnce}), as if the
 * caller unregistered its memory right after the store checked it: the transfer then fails on the local side.
 */
final class StaleCheckEngine implements TransferEngine {
    private final TransferEngine real;
    private final AtomicInteger lies = new AtomicInteger();

    StaleCheckEngine(TransferEngine real) {
        this.real = real;
    }

    void lieOnce() {
        lies.set(1);
    }

    @Override
    public Optional<RegisteredMemory> findRegistration(MemorySegment range) {
        if (lies.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            return Optional.of(new RegisteredMemory() {
                @Override
                public MemorySegment segment() {
                    return range;
                }

                @Override
                public Location location() {
                    return Location.CPU;
                }

                @Override
                public Permission permission() {
                    return Permission.LOCAL_ONLY;
                }

                @Override
                public boolean engineAllocated() {
                    return false;
                }
            });
        }
        return real.findRegistration(range);
    }

    @Override
    public String segmentName() {
        return real.segmentName();
    }

    @Override
    public SegmentHandle localSegment() {
        return real.localSegment();
    }

    @Override
    public RegisteredMemory register(MemorySegment memory, Location location, Permission permission) {
        return real.register(memory, location, permission);
    }

    @Override
    public RegisteredMemory allocate(long size, Location location, Permission permission) {
        return real.allocate(size, location, permission);
    }

    @Override
    public void unregister(RegisteredMemory memory) {
        real.unregister(memory);
    }

    @Override
    public SegmentHandle openSegment(String name) {
        return real.openSegment(name);
    }

    @Override
    public void closeSegment(SegmentHandle segment) {
        real.closeSegment(segment);
    }

    @Override
    public SegmentInfo segmentInfo(SegmentHandle segment) {
        return real.segmentInfo(segment);
    }

    @Override
    public Batch allocateBatch(int capacity) {
        return real.allocateBatch(capacity);
    }

    @Override
    public CompletableFuture<TransferStatus> submit(TransferRequest request) {
        return real.submit(request);
    }

    @Override
    public TransferPlan explain(TransferRequest request) {
        return real.explain(request);
    }

    @Override
    public CompletableFuture<Void> sendNotification(SegmentHandle target, String message) {
        return real.sendNotification(target, message);
    }

    @Override
    public List<Notification> drainNotifications() {
        return real.drainNotifications();
    }

    @Override
    public Notification awaitNotification(Duration timeout) throws InterruptedException {
        return real.awaitNotification(timeout);
    }

    @Override
    public void onNotification(Consumer<Notification> listener) {
        real.onNotification(listener);
    }

    @Override
    public List<TransportInfo> transports() {
        return real.transports();
    }

    @Override
    public void close() {
        real.close();
    }
}

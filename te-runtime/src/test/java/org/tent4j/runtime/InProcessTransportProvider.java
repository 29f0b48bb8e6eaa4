package org.tent4j.runtime;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * A transport for engines of one JVM that copies on a worker thread, checking the target's registrations exactly as a
 * network target would. It exists so runtime tests exercise slicing, selection, scheduling and failover without
 * sockets. Options shape its paths: {@code paths}, {@code slow_path} + {@code slow_delay}, {@code fail_path},
 * {@code fail_after} (every slice after that many posted fails), {@code held} (the test settles each slice).
 */
public class InProcessTransportProvider implements TransportProvider {
    static final Map<String, TransportContext> TARGETS = new ConcurrentHashMap<>();
    /** Slices posted, by {@code transport@initiator segment}: which transport really carried a request. */
    static final Map<String, AtomicLong> POSTS = new ConcurrentHashMap<>();
    /** Completed when the first slice is posted, by {@code transport@initiator segment}. */
    static final Map<String, java.util.concurrent.CompletableFuture<Void>> FIRST_POST = new ConcurrentHashMap<>();
    /** Slices copied and completed, by {@code transport@initiator segment}. */
    static final Map<String, AtomicLong> COPIES = new ConcurrentHashMap<>();
    /** Slices posted and not yet settled, by {@code transport@initiator segment}. */
    static final Map<String, AtomicLong> IN_FLIGHT = new ConcurrentHashMap<>();
    /** The most slices ever in flight at once, by {@code transport@initiator segment}. */
    static final Map<String, AtomicLong> MAX_IN_FLIGHT = new ConcurrentHashMap<>();
    /** Completed slices kept for a second, late settlement ({@code late_settle}), by {@code transport@initiator segment}. */
    static final Map<String, java.util.concurrent.BlockingQueue<Slice>> SETTLED = new ConcurrentHashMap<>();
    /** Slices posted with {@code held} on and not settled yet, by {@code transport@initiator segment}. */
    static final Map<String, java.util.concurrent.BlockingQueue<Held>> HELD = new ConcurrentHashMap<>();

    /** Appends paths to the open connections, by {@code transport@initiator segment} ({@link #addPaths}). */
    static final Map<String, List<java.util.function.IntConsumer>> GROW = new ConcurrentHashMap<>();
    /** Connections opened, by {@code transport@initiator segment}. */
    static final Map<String, AtomicLong> CONNECTS = new ConcurrentHashMap<>();

    /** A slice the transport holds until the test settles it: {@code settle} copies it and completes it on the caller's thread. */
    record Held(Slice slice, Runnable settle) {
    }

    @Override public String id() { return "inproc"; }

    protected int rank() {
        return 50;
    }

    @Override public Availability availability() { return Availability.available(); }

    @Override
    public TransportCapabilities capabilities() {
        return TransportCapabilities.builder().sameHostOnly(true).maxSliceSize(256 << 10).rank(rank()).build();
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(OptionSpec.of("fail_after", OptionSpec.Type.LONG, -1, "fail every slice after this many were posted"),
                OptionSpec.of("paths", OptionSpec.Type.INT, 1, "paths per connection"),
                OptionSpec.of("slow_path", OptionSpec.Type.INT, -1, "path whose slices are delayed"),
                OptionSpec.of("slow_delay", OptionSpec.Type.DURATION, "0ms", "delay of each slice on the slow path (all paths when slow_path is -1)"),
                OptionSpec.of("fail_path", OptionSpec.Type.INT, -1, "path whose slices all fail"),
                OptionSpec.of("deny_path", OptionSpec.Type.INT, -1, "path whose slices all fail with PERMISSION_DENIED (not retryable)"),
                OptionSpec.of("cancellable", OptionSpec.Type.BOOLEAN, false, "declare cancellation; a slice not yet copied can be canceled"),
                OptionSpec.of("double_complete", OptionSpec.Type.BOOLEAN, false, "settle every completed slice a second time (a buggy transport)"),
                OptionSpec.of("late_settle", OptionSpec.Type.BOOLEAN, false, "keep every completed slice; settleLate completes them all a second time (a buggy transport, late)"),
                OptionSpec.of("inline", OptionSpec.Type.BOOLEAN, false, "copy on the posting thread (as shm does for small slices), not on a worker; slow_delay then lengthens each copy"),
                OptionSpec.of("held", OptionSpec.Type.BOOLEAN, false, "hold every slice until the test settles it (see held()), so a test decides when, in virtual time, each one completes"),
                OptionSpec.of("concurrent_posts", OptionSpec.Type.BOOLEAN, false, "declare concurrentPosts (post is thread-safe here)"),
                OptionSpec.of("refuse_unregister", OptionSpec.Type.INT, 0, "how many unregisterBuffer calls fail (a peer still holds the buffer)"));
    }

    @Override
    public Transport create(TransportContext context) {
        TARGETS.put(id() + "@" + context.segmentName(), context);
        OptionValues o = context.options();
        long failAfter = o.getLong("fail_after");
        int paths = o.getInt("paths");
        int slowPath = o.getInt("slow_path");
        long slowNanos = o.getDuration("slow_delay").toNanos();
        int failPath = o.getInt("fail_path");
        int denyPath = o.getInt("deny_path");
        boolean cancellable = o.getBoolean("cancellable");
        boolean doubleComplete = o.getBoolean("double_complete");
        boolean inline = o.getBoolean("inline");
        boolean lateSettle = o.getBoolean("late_settle");
        boolean concurrentPosts = o.getBoolean("concurrent_posts");
        boolean held = o.getBoolean("held");
        java.util.Set<Slice> pending = ConcurrentHashMap.newKeySet();
        java.util.concurrent.atomic.AtomicInteger refusals = new java.util.concurrent.atomic.AtomicInteger(o.getInt("refuse_unregister"));
        // fresh per engine: a later engine of this JVM may get the same segment name (host:port) back
        String key = id() + "@" + context.segmentName();
        AtomicLong inFlight = new AtomicLong();
        java.util.concurrent.BlockingQueue<Slice> settled = new java.util.concurrent.LinkedBlockingQueue<>();
        SETTLED.put(key, settled);
        java.util.concurrent.BlockingQueue<Held> heldSlices = new java.util.concurrent.LinkedBlockingQueue<>();
        HELD.put(key, heldSlices);
        IN_FLIGHT.put(key, inFlight);
        AtomicLong maxInFlight = new AtomicLong();
        MAX_IN_FLIGHT.put(key, maxInFlight);
        AtomicLong copies = new AtomicLong();
        COPIES.put(key, copies);
        java.util.concurrent.CompletableFuture<Void> firstPost = new java.util.concurrent.CompletableFuture<>();
        FIRST_POST.put(key, firstPost);
        AtomicLong posted = new AtomicLong();
        String id = id();
        AtomicLong posts = new AtomicLong();
        POSTS.put(key, posts);
        List<java.util.function.IntConsumer> growers = new java.util.concurrent.CopyOnWriteArrayList<>();
        GROW.put(key, growers);
        AtomicLong connects = new AtomicLong();
        CONNECTS.put(key, connects);
        return new Transport() {
            @Override public String id() { return id; }

            @Override
            public void unregisterBuffer(LocalBuffer buffer) {
                if (refusals.getAndDecrement() > 0) {
                    throw new TransferException(ErrorCode.TIMEOUT, "a peer's access to " + buffer + " is still pending");
                }
            }

            @Override
            public java.util.Optional<TransportCapabilities> capabilities() {
                TransportCapabilities c = InProcessTransportProvider.this.capabilities();
                return cancellable || concurrentPosts
                        ? java.util.Optional.of(c.toBuilder().cancellation(cancellable).concurrentPosts(concurrentPosts).build())
                        : java.util.Optional.empty();
            }

            @Override
            public PeerConnection connect(SegmentDescriptor peer) {
                TransportContext target = TARGETS.get(id + "@" + peer.name());
                if (target == null) {
                    throw new TransferException(ErrorCode.PEER_UNREACHABLE, "no in-process engine '" + peer.name() + "'");
                }
                connects.incrementAndGet();
                java.util.concurrent.atomic.AtomicInteger pathCount = new java.util.concurrent.atomic.AtomicInteger(paths);
                java.util.concurrent.atomic.AtomicReference<Runnable> added = new java.util.concurrent.atomic.AtomicReference<>();
                growers.add(n -> {
                    pathCount.addAndGet(n);
                    Runnable r = added.get();
                    if (r != null) {
                        r.run();
                    }
                });
                return new PeerConnection() {
                    @Override public int pathCount() { return pathCount.get(); }
                    @Override public String pathName(int p) { return "p" + p; }
                    @Override public void onPathsAdded(Runnable r) { added.set(r); }

                    @Override
                    public void post(Slice s) {
                        long n = posted.incrementAndGet();
                        posts.incrementAndGet();
                        maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                        pending.add(s);
                        firstPost.complete(null);
                        Runnable copy = () -> {
                            if (!pending.remove(s)) {
                                return; // canceled
                            }
                            if ((failAfter >= 0 && n > failAfter) || s.path() == failPath) {
                                inFlight.decrementAndGet();
                                s.fail(ErrorCode.PEER_FAILED, "injected failure on path " + s.path());
                                return;
                            }
                            if (s.path() == denyPath) {
                                inFlight.decrementAndGet();
                                s.fail(ErrorCode.PERMISSION_DENIED, "injected denial on path " + s.path());
                                return;
                            }
                            try {
                                LocalBuffer remote = target.localMemory().checkRemoteAccess(s.remoteAddress(), s.length(), s.opcode());
                                MemorySegment r = remote.segment();
                                long roff = s.remoteAddress() - remote.address();
                                MemorySegment l = s.localBuffer().segment();
                                if (s.opcode() == Opcode.WRITE) {
                                    MemorySegment.copy(l, s.localOffset(), r, roff, s.length());
                                } else {
                                    MemorySegment.copy(r, roff, l, s.localOffset(), s.length());
                                }
                                inFlight.decrementAndGet();
                                copies.incrementAndGet();
                                s.complete();
                                if (lateSettle) {
                                    settled.add(s);
                                }
                                if (doubleComplete) {
                                    s.complete();
                                }
                            } catch (TransferException e) {
                                inFlight.decrementAndGet();
                                s.fail(e.code(), e.getMessage());
                            }
                        };
                        if (held) {
                            heldSlices.add(new Held(s, copy));
                        } else if (inline) {
                            if (slowNanos > 0) {
                                java.util.concurrent.locks.LockSupport.parkNanos(slowNanos); // a slow copy, on this thread
                            }
                            copy.run();
                        } else if (slowNanos > 0 && (slowPath < 0 || s.path() == slowPath)) {
                            context.scheduler().schedule(() -> context.workers().execute(copy), slowNanos, TimeUnit.NANOSECONDS);
                        } else {
                            context.workers().execute(copy);
                        }
                    }

                    @Override
                    public boolean cancel(Slice s) {
                        if (cancellable && pending.remove(s)) {
                            inFlight.decrementAndGet();
                            return true;
                        }
                        return false;
                    }

                    @Override public boolean isOpen() { return true; }
                    @Override public void close() { }
                };
            }

            @Override
            public void close() {
                TARGETS.remove(id + "@" + context.segmentName(), context);
            }
        };
    }

    /** Appends {@code n} paths to every connection {@code transportId} of the engine {@code segment} opened, as a rail that came back would. */
    static void addPaths(String transportId, String segment, int n) {
        GROW.get(transportId + "@" + segment).forEach(g -> g.accept(n));
    }

    /** Connections {@code transportId} of the engine {@code segment} opened so far. */
    static long connects(String transportId, String segment) {
        return CONNECTS.get(transportId + "@" + segment).get();
    }

    /** Completes when {@code transportId} of the engine {@code segment} posts its first slice. */
    static java.util.concurrent.CompletableFuture<Void> firstPost(String transportId, String segment) {
        return FIRST_POST.computeIfAbsent(transportId + "@" + segment, k -> new java.util.concurrent.CompletableFuture<>());
    }

    /** The slices {@code transportId} of the engine {@code segment} holds ({@code held}), in the order they were posted. */
    static java.util.concurrent.BlockingQueue<Held> held(String transportId, String segment) {
        return HELD.get(transportId + "@" + segment);
    }

    /** Slices posted by {@code transportId} of the engine {@code segment} and not settled yet. */
    static long inFlight(String transportId, String segment) {
        AtomicLong n = IN_FLIGHT.get(transportId + "@" + segment);
        return n == null ? 0 : n.get();
    }

    /**
     * Completes {@code n} slices that {@code late_settle} kept a second time (as a buggy transport would, late), oldest
     * first, waiting for each to have been settled once (a transport thread keeps it just after its first settlement).
     */
    static void settleLate(String transportId, String segment, int n) throws InterruptedException {
        java.util.concurrent.BlockingQueue<Slice> q = SETTLED.get(transportId + "@" + segment);
        for (int i = 0; i < n; i++) {
            Slice s = q.poll(10, TimeUnit.SECONDS);
            if (s == null) {
                throw new AssertionError("only " + i + " of " + n + " slices were settled within 10 s");
            }
            s.complete();
        }
    }

    /** Slices posted by {@code transportId} of the engine {@code segment} so far. */
    static long posts(String transportId, String segment) {
        AtomicLong n = POSTS.get(transportId + "@" + segment);
        return n == null ? 0 : n.get();
    }

    /** A second, lower-ranked instance, for failover between transports. */
    public static final class Backup extends InProcessTransportProvider {
        @Override public String id() { return "inproc-b"; }

        @Override
        protected int rank() {
            return 60;
        }
    }

    /**
     * An in-process transport that, per engine, can be made to fail each check selection makes, so tests can prove that
     * explain and submit agree. It runs only where {@code transports.scripted.on=true} and sorts first
     * ({@link #order()} 10). {@code mode}: {@code ok}, {@code unavailable} (cannot run here), {@code unreachable}
     * (says it cannot reach any peer), {@code no_kinds} (moves no host memory), {@code unregistered} (serves no
     * buffer), {@code connect_fails} (its connect throws PEER_UNREACHABLE), {@code silent} (a link that went silent:
     * the first connection takes slices and never answers, fails them at their deadline as the tcp lane's sweep does
     * and closes; every later connect hangs as one into a silent link does), {@code connect_hangs} (every connect
     * hangs). A hanging connect throws PEER_UNREACHABLE after 5 s, tcp's default connect timeout, or at close.
     */
    public static final class Scripted extends InProcessTransportProvider {
        @Override public String id() { return "scripted"; }

        @Override public int order() { return 10; }

        @Override
        protected int rank() {
            return 10;
        }

        @Override
        public List<OptionSpec> options() {
            List<OptionSpec> o = new java.util.ArrayList<>(super.options());
            o.add(OptionSpec.of("on", OptionSpec.Type.BOOLEAN, false, "run at all"));
            o.add(OptionSpec.of("mode", OptionSpec.Type.STRING, "ok", "which check fails"));
            return o;
        }

        @Override
        public Availability availability(OptionValues options) {
            if (!options.getBoolean("on")) {
                return Availability.unavailable("transports.scripted.on is false");
            }
            return options.getString("mode").equals("unavailable") ? Availability.unavailable("scripted to be unavailable")
                    : Availability.available();
        }

        @Override
        public Transport create(TransportContext context) {
            Transport inner = super.create(context);
            String mode = context.options().getString("mode");
            java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.atomic.AtomicBoolean wentSilent = new java.util.concurrent.atomic.AtomicBoolean();
            return new Transport() {
                @Override public String id() { return inner.id(); }

                @Override
                public java.util.Optional<TransportCapabilities> capabilities() {
                    return mode.equals("no_kinds") ? java.util.Optional.of(TransportCapabilities.builder()
                            .memoryPath(org.tent4j.api.MemoryKind.CUDA, org.tent4j.api.MemoryKind.CUDA)
                            .sameHostOnly(true).maxSliceSize(256 << 10).rank(10).build()) : java.util.Optional.empty();
                }

                @Override
                public java.util.Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
                    return mode.equals("unregistered") ? java.util.Optional.empty() : inner.registerBuffer(buffer);
                }

                @Override
                public java.util.Optional<String> unreachableReason(SegmentDescriptor peer) {
                    return mode.equals("unreachable") ? java.util.Optional.of("scripted to reach no peer") : java.util.Optional.empty();
                }

                @Override
                public PeerConnection connect(SegmentDescriptor peer) {
                    if (mode.equals("connect_fails")) {
                        throw new TransferException(ErrorCode.PEER_UNREACHABLE, "scripted connect failure to '" + peer.name() + "'");
                    }
                    if (mode.equals("connect_hangs") || (mode.equals("silent") && !wentSilent.compareAndSet(false, true))) {
                        try {
                            closed.await(5, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        throw new TransferException(ErrorCode.PEER_UNREACHABLE, "scripted: no answer to connect to '"
                                + peer.name() + "' within 5 s");
                    }
                    return mode.equals("silent") ? new SilentConnection(context) : inner.connect(peer);
                }

                @Override
                public void close() {
                    closed.countDown();
                    inner.close();
                }
            };
        }
    }

    /**
     * Two paths to a peer that went silent: slices are taken and never answered; at the first deadline the connection
     * dies as a tcp lane does, failing what it holds (TIMEOUT past its deadline, PEER_FAILED otherwise).
     */
    static final class SilentConnection implements PeerConnection {
        private final TransportContext context;
        private final java.util.List<Slice> held = new java.util.ArrayList<>();
        private boolean open = true;

        SilentConnection(TransportContext context) {
            this.context = context;
        }

        @Override public int pathCount() { return 2; }
        @Override public String pathName(int p) { return "lane-" + p; }

        @Override
        public void post(Slice s) {
            synchronized (this) {
                if (open) {
                    held.add(s);
                    context.scheduler().schedule(this::die, Math.max(0, s.deadlineNanos() - context.clock().nanoTime()),
                            TimeUnit.NANOSECONDS);
                    return;
                }
            }
            s.fail(ErrorCode.PEER_FAILED, "scripted: silent connection is closed");
        }

        private void die() {
            java.util.List<Slice> failing;
            synchronized (this) {
                open = false;
                failing = new java.util.ArrayList<>(held);
                held.clear();
            }
            long now = context.clock().nanoTime();
            for (Slice s : failing) {
                if (now - s.deadlineNanos() >= 0) {
                    s.fail(ErrorCode.TIMEOUT, "scripted: no answer within the deadline");
                } else {
                    s.fail(ErrorCode.PEER_FAILED, "scripted: connection closed");
                }
            }
        }

        @Override public synchronized boolean isOpen() { return open; }
        @Override public void close() { die(); }
    }

    /** Built against a newer transport SPI than this runtime's: must be refused, never probed. */
    public static final class FromTheFuture extends InProcessTransportProvider {
        @Override public String id() { return "future"; }

        @Override public int spiVersion() { return SPI_VERSION + 1; }

        @Override
        public Availability availability() {
            throw new AssertionError("a refused provider was probed");
        }
    }

    /** Counts probes, so tests can prove a disabled provider is neither probed nor asked for capabilities at start. */
    public static final class Unprobed extends InProcessTransportProvider {
        static final java.util.concurrent.atomic.AtomicInteger AVAILABILITY_CALLS = new java.util.concurrent.atomic.AtomicInteger();
        static final java.util.concurrent.atomic.AtomicInteger CAPABILITY_CALLS = new java.util.concurrent.atomic.AtomicInteger();

        @Override public String id() { return "unprobed"; }

        @Override
        public Availability availability(OptionValues options) {
            AVAILABILITY_CALLS.incrementAndGet();
            return Availability.unavailable("never runs");
        }

        @Override
        public TransportCapabilities capabilities() {
            CAPABILITY_CALLS.incrementAndGet();
            return super.capabilities();
        }
    }

    /**
     * Two providers whose probes, when {@code pair} is set, each wait up to 5 s for the other's to run at the same
     * time: both answer "probed together" only if the engine probes them side by side. Unset, they answer at once.
     */
    public abstract static class Paired extends InProcessTransportProvider {
        private static final java.util.concurrent.Exchanger<String> MEET = new java.util.concurrent.Exchanger<>();

        @Override
        public List<OptionSpec> options() {
            return List.of(OptionSpec.of("pair", OptionSpec.Type.BOOLEAN, false, "wait for the other paired probe"));
        }

        @Override
        public Availability availability(OptionValues options) {
            if (!options.getBoolean("pair")) {
                return Availability.unavailable("not paired");
            }
            try {
                MEET.exchange(id(), 5, TimeUnit.SECONDS);
                return Availability.unavailable("probed together");
            } catch (java.util.concurrent.TimeoutException e) {
                return Availability.unavailable("probed alone");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Availability.unavailable("interrupted");
            }
        }
    }

    public static final class PairedA extends Paired {
        @Override public String id() { return "paired-a"; }
    }

    public static final class PairedB extends Paired {
        @Override public String id() { return "paired-b"; }
    }
}

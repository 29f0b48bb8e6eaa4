package org.tent4j.transport.efa;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.Transport;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * Not a test: fi_write / fi_read loops on one provider, first straight through the FFM bindings (two endpoints in
 * this process; one thread posts and polls the initiator's CQ, another polls the target's, as a C fi_rma_bw-style
 * loop between two processes would), then through the efa
 * transport (slices posted to a PeerConnection, completed by its progress thread), so the transport's overhead over
 * raw libfabric can be read off. Both sides run in this JVM, so the numbers are loopback numbers.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp ... org.tent4j.transport.efa.RawFabricBench \
 *      [provider=tcp;ofi_rxm] [size=4m] [total=2g] [depth=8]
 * </pre>
 */
public final class RawFabricBench {
    private RawFabricBench() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new java.util.HashMap<>(Map.of("provider", "tcp;ofi_rxm", "size", "4m", "total", "2g",
                "depth", "8"));
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq < 0 || !a.containsKey(arg.substring(0, eq))) {
                throw new IllegalArgumentException("usage: RawFabricBench [provider=P] [size=4m] [total=2g] [depth=8]");
            }
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        String provider = a.get("provider");
        long size = org.tent4j.api.ConfigValues.parseSize("size", a.get("size"));
        long total = org.tent4j.api.ConfigValues.parseSize("total", a.get("total"));
        int depth = Integer.parseInt(a.get("depth"));
        long ops = Math.max(depth, total / size);
        System.out.printf(Locale.ROOT, "provider=%s size=%d depth=%d ops=%d (%d MiB per run)%n", provider, size, depth,
                ops, ops * size >> 20);
        raw(provider, size, depth, ops);
        transport(provider, size, depth, ops);
    }

    private static void raw(String provider, long size, int depth, long ops) throws Exception {
        LibFabric lib = LibFabric.load();
        try (FabricInfo infoA = FabricInfo.query(lib, provider); FabricInfo infoB = FabricInfo.query(lib, provider);
             Fabric fa = new Fabric(lib, infoA, 1, 1024); Fabric fb = new Fabric(lib, infoB, 1, 1024);
             Arena arena = Arena.ofShared()) {
            MrMode mode = new MrMode(infoA.mrMode);
            MemorySegment src = arena.allocate(size, 4096);
            MemorySegment dst = arena.allocate(size, 4096);
            EfaPair.fill(src, 1);
            long access = FiAbi.FI_READ | FiAbi.FI_WRITE | FiAbi.FI_REMOTE_READ | FiAbi.FI_REMOTE_WRITE;
            Fabric.MemoryRegion local = fa.register(src, access, mode.requestedKey(1));
            Fabric.MemoryRegion remote = fb.register(dst, access, mode.requestedKey(2));
            long key = mode.providerKeys() ? remote.key() : 2;
            long rma = mode.publishedBase(dst.address());
            MemorySegment desc = mode.localDescriptors() ? local.desc() : MemorySegment.NULL;
            long peer = fa.insertAddress(fb.name(0));
            fb.insertAddress(fa.name(0));
            MemorySegment contexts = arena.allocate(FiAbi.CONTEXT_SIZE * depth, FiAbi.CONTEXT_SIZE);
            MemorySegment cqe = arena.allocate(FiAbi.CQE_SIZE * 64, 8);
            MemorySegment err = arena.allocate(FiAbi.ERR_ENTRY_ALLOC, 8);
            // the target side gets its own thread, as it would in its own process (manual-progress providers move
            // data only while its CQ is polled)
            MemorySegment targetCqe = arena.allocate(FiAbi.CQE_SIZE * 8, 8);
            java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
            Thread target = Thread.ofPlatform().daemon().name("bench-target").start(() -> {
                while (running.get()) {
                    fb.readCompletions(targetCqe, 8);
                    Thread.yield();
                }
            });
            try {
                for (boolean write : new boolean[] {true, false}) {
                    loop(fa, write, src, size, desc, peer, rma, key, contexts, cqe, err, depth,
                            Math.max(depth, ops / 4));
                    long t0 = System.nanoTime();
                    loop(fa, write, src, size, desc, peer, rma, key, contexts, cqe, err, depth, ops);
                    report("raw " + (write ? "fi_write" : "fi_read "), provider, size, ops, System.nanoTime() - t0);
                }
            } finally {
                running.set(false);
                target.join();
            }
        }
    }

    /** Keeps {@code depth} operations in flight until {@code ops} completed, polling the initiator's CQ. */
    private static void loop(Fabric fa, boolean write, MemorySegment src, long size, MemorySegment desc,
                             long peer, long rma, long key, MemorySegment contexts, MemorySegment cqe,
                             MemorySegment err, int depth, long ops) {
        long posted = 0;
        long done = 0;
        int[] free = new int[depth];
        int nFree = depth;
        for (int i = 0; i < depth; i++) {
            free[i] = i;
        }
        while (done < ops) {
            while (posted < ops && nFree > 0) {
                int slot = free[nFree - 1];
                MemorySegment ctx = contexts.asSlice(slot * FiAbi.CONTEXT_SIZE, FiAbi.CONTEXT_SIZE);
                long rc = write ? fa.write(0, src, size, desc, peer, rma, key, ctx)
                        : fa.read(0, src, size, desc, peer, rma, key, ctx);
                if (rc == -FiAbi.FI_EAGAIN) {
                    break;
                }
                if (rc != 0) {
                    throw new IllegalStateException(fa.lib().describe(write ? "fi_write" : "fi_read", rc));
                }
                nFree--;
                posted++;
            }
            long n = fa.readCompletions(cqe, 64);
            if (n > 0) {
                for (int i = 0; i < n; i++) {
                    long c = cqe.get(ADDRESS, i * FiAbi.CQE_SIZE + FiAbi.CQE_OP_CONTEXT).address();
                    free[nFree++] = (int) ((c - contexts.address()) / FiAbi.CONTEXT_SIZE);
                }
                done += n;
            } else if (n == -FiAbi.FI_EAGAIN) {
                Thread.yield(); // on a small shared machine a pure spin starves the provider's and the target's threads
            } else if (n == -FiAbi.FI_EAVAIL) {
                err.fill((byte) 0);
                fa.readError(err);
                throw new IllegalStateException("error completion: err " + err.get(java.lang.foreign.ValueLayout.JAVA_INT,
                        FiAbi.ERR_ERR));
            }
        }
    }

    private static void transport(String provider, long size, int depth, long ops) throws Exception {
        EfaTransportProvider p = new EfaTransportProvider();
        Map<String, String> opts = Map.of(EfaTransportProvider.OPT_PROVIDER, provider);
        try (TestTransportContext ca = new TestTransportContext("bench-a", "m", "efa", p.options(), opts,
                Duration.ofSeconds(60));
             TestTransportContext cb = new TestTransportContext("bench-b", "m", "efa", p.options(), opts,
                     Duration.ofSeconds(60));
             Arena arena = Arena.ofShared()) {
            Transport ta = p.create(ca);
            Transport tb = p.create(cb);
            try {
                MemorySegment src = arena.allocate(size, 4096);
                MemorySegment dst = arena.allocate(size, 4096);
                EfaPair.fill(src, 1);
                TestLocalMemory.Buffer lb = ca.memory().register(src, Permission.READ_WRITE);
                ta.registerBuffer(lb).orElseThrow();
                TestLocalMemory.Buffer rb = cb.memory().register(dst, Permission.READ_WRITE);
                var remote = rb.describe("efa", tb.registerBuffer(rb).orElseThrow());
                PeerConnection c = ta.connect(org.tent4j.spi.SegmentDescriptor.builder().name("bench-b")
                        .machineId("m").host("127.0.0.1").controlPort(0).transports(java.util.List.of("efa"))
                        .transportAttributes(Map.of("efa", tb.segmentAttributes())).buffers(java.util.List.of(remote))
                        .version(1).build());
                for (Opcode op : new Opcode[] {Opcode.WRITE, Opcode.READ}) {
                    slices(c, op, lb, remote, size, depth, Math.max(depth, ops / 4));
                    long t0 = System.nanoTime();
                    slices(c, op, lb, remote, size, depth, ops);
                    report("transport " + op, provider, size, ops, System.nanoTime() - t0);
                }
                c.close();
            } finally {
                ta.close();
                tb.close();
            }
        }
    }

    private static void slices(PeerConnection c, Opcode op, TestLocalMemory.Buffer local,
                               org.tent4j.spi.BufferDescriptor remote, long size, int depth, long ops)
            throws Exception {
        java.util.ArrayDeque<TestSlice> inFlight = new java.util.ArrayDeque<>();
        long posted = 0;
        while (posted < ops || !inFlight.isEmpty()) {
            while (posted < ops && inFlight.size() < depth) {
                TestSlice s = new TestSlice(op, local, 0, remote, remote.address(), size,
                        System.nanoTime() + TimeUnit.SECONDS.toNanos(60));
                c.post(s);
                inFlight.add(s);
                posted++;
            }
            inFlight.poll().result().get(60, TimeUnit.SECONDS);
        }
    }

    private static void report(String what, String provider, long size, long ops, long nanos) {
        double bytes = (double) size * ops;
        System.out.printf(Locale.ROOT, "%-18s %-12s size=%-9d %7.2f GB/s  %8.1f us/op  (%d ops in %.2f s)%n", what,
                provider, size, bytes / nanos, nanos / 1e3 / ops, ops, nanos / 1e9);
    }
}

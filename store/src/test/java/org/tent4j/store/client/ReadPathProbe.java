package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.rpc.Wire;

/** Not a test: splits a get's time into the master RPC and the transfer. Args: master key iterations. */
public final class ReadPathProbe {
    public static void main(String[] args) throws Exception {
        try (TransferEngine engine = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
             StoreClient c = StoreClient.builder(engine, args[0]).connect()) {
            int n = Integer.parseInt(args[2]);
            List<ReplicaLocation> rs = Wire.replicas(c.master().getReplicaList(args[1]).getReplicasList());
            RegisteredMemory buf = engine.allocate(rs.getFirst().length(), Location.CPU, Permission.READ_WRITE);
            var target = engine.openSegment(rs.getFirst().engineSegment());
            TransferRequest req = TransferRequest.read(buf.segment(), target, rs.getFirst().address());
            System.out.println(engine.explain(req));
            for (int round = 0; round < 2; round++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    c.master().getReplicaList(args[1]);
                }
                long t1 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    engine.submit(req).join().orThrow();
                }
                long t2 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    c.getInto(args[1], buf.segment());
                }
                long t3 = System.nanoTime();
                System.out.printf("rpc %.0f us, transfer %.0f us, getInto %.0f us%n", (t1 - t0) / 1e3 / n, (t2 - t1) / 1e3 / n, (t3 - t2) / 1e3 / n);
            }
            // 32 reads of 4 KiB: one submit each, against one engine Batch
            List<TransferRequest> small = new java.util.ArrayList<>();
            for (int j = 0; j < 32; j++) {
                small.add(TransferRequest.read(buf.segment().asSlice(j * 4096L, 4096), target, rs.getFirst().address() + j * 4096L));
            }
            for (int round = 0; round < 3; round++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    List<java.util.concurrent.CompletableFuture<org.tent4j.api.TransferStatus>> fs = new java.util.ArrayList<>();
                    for (TransferRequest r : small) {
                        fs.add(engine.submit(r));
                    }
                    fs.forEach(f -> f.join().orThrow());
                }
                long t1 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    try (org.tent4j.api.Batch b = engine.allocateBatch(32)) {
                        b.submit(small);
                        b.completion().join().orThrow();
                    }
                }
                long t2 = System.nanoTime();
                System.out.printf("32 x 4 KiB: submits %.0f us, one batch %.0f us%n", (t1 - t0) / 1e3 / n, (t2 - t1) / 1e3 / n);
            }
        }
    }
}

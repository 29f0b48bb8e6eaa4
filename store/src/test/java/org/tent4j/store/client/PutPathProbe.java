package org.tent4j.store.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.proto.PutEndRequest;
import org.tent4j.store.proto.PutStartRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.Wire;

/** Not a test: splits a batch put's time into BatchPutStart, the writes and BatchPutEnd. Args: master batch-size rounds. */
public final class PutPathProbe {
    public static void main(String[] args) throws Exception {
        int size = 4096;
        int batch = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        try (TransferEngine engine = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
             StoreClient c = StoreClient.builder(engine, args[0]).connect()) {
            RegisteredMemory buf = engine.allocate((long) size * batch, Location.CPU, Permission.READ_WRITE);
            long key = 0;
            for (int phase = 0; phase < 3; phase++) {
                long start = 0, writes = 0, end = 0;
                for (int r = 0; r < rounds; r++) {
                    List<PutStartRequest> reqs = new ArrayList<>(batch);
                    for (int j = 0; j < batch; j++) {
                        reqs.add(MasterClient.putStartRequest(c.clientId(), "probe/" + System.nanoTime() + "/" + key++, size,
                                ReplicateConfig.defaults(), c.host(), false));
                    }
                    long t0 = System.nanoTime();
                    List<PutStartResponse> tickets = c.master().batchPutStart(reqs);
                    long t1 = System.nanoTime();
                    Transfers w = new Transfers(c.access(), batch);
                    for (int j = 0; j < batch; j++) {
                        w.add(false, Wire.replicas(tickets.get(j).getReplicasList()).getFirst(), 0,
                                buf.segment().asSlice((long) j * size, size));
                    }
                    if (w.run().firstFailure("probe", "writing", 0, w.size()) != null) {
                        throw new IllegalStateException("write failed");
                    }
                    long t2 = System.nanoTime();
                    List<PutEndRequest> ends = new ArrayList<>(batch);
                    for (int j = 0; j < batch; j++) {
                        ends.add(MasterClient.endRequest(c.clientId(), reqs.get(j).getKey(), tickets.get(j).getPutId()));
                    }
                    c.master().batchPutEnd(ends);
                    long t3 = System.nanoTime();
                    start += t1 - t0;
                    writes += t2 - t1;
                    end += t3 - t2;
                }
                System.out.printf("batch %d: BatchPutStart %.0f us, writes %.0f us, BatchPutEnd %.0f us%n", batch,
                        start / 1e3 / rounds, writes / 1e3 / rounds, end / 1e3 / rounds);
            }
            engine.unregister(buf);
        }
    }
}

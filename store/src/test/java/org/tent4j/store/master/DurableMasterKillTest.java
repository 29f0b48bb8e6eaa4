package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;
import org.tent4j.testkit.ChildJvm;

/**
 * The master in a child JVM on its durable log, SIGKILLed right after the last put was acknowledged and started
 * again on the same dir and port, with two nodes. One kept its memory: every object on it reads back CRC-equal. The
 * other was restarted while the master was down (its client and engine closed; a new client, so a new incarnation, on
 * an engine at the same address with the same memory addresses, as a process restarted on a fixed port with the
 * same layout gets, holding other bytes): none of the objects only it held is served (each {@code OBJECT_NOT_FOUND},
 * never the new memory's bytes), those with a replica on the other node read back CRC-equal from there, and new puts
 * into its memory, over the old objects' ranges, read back CRC-equal.
 */
class DurableMasterKillTest {
    private static final long RESTARTED_MEMORY = 2 << 20;

    @TempDir
    Path dir;

    @Test
    void everyAcknowledgedPutSurvivesSigkillAndARestartedNodesOldObjectsAreNeverServed() throws Exception {
        List<TransferEngine> engines = new ArrayList<>();
        ChildJvm master = ChildJvm.start(DurableMasterProcess.class, dir.toString(), "0");
        try (Arena arena = Arena.ofShared()) {
            int port = Integer.parseInt(master.awaitLine("LISTENING ", Duration.ofSeconds(60)).split(" ")[1]);
            String address = "127.0.0.1:" + port;
            StoreClient node = StoreClient.builder(DurableValues.engine(engines), address).connect();
            SegmentSpec kept = node.contribute(4 << 20);
            MemorySegment memory = arena.allocate(RESTARTED_MEMORY, 4096);
            // on a port it binds itself, not one found free earlier that another test could take meanwhile; its
            // segment name is host:port of its control plane, which the restarted node then binds again
            TransferEngine first = nodeEngine(0);
            int restartedPort = Integer.parseInt(first.segmentName().substring(first.segmentName().lastIndexOf(':') + 1));
            // a short call timeout: its close while the master is down gives up on unmount and leave at once
            StoreClient restarting = StoreClient.builder(first, address).rpcTimeout(Duration.ofSeconds(3)).connect();
            SegmentSpec before = restarting.contribute(first.register(memory, Location.CPU, Permission.READ_WRITE));
            StoreClient user = StoreClient.builder(DurableValues.engine(engines), address).stagingBytes(1 << 20).connect();
            List<byte[]> values = DurableValues.put(user, "killed/", 40, 2222, on(kept));
            List<byte[]> gone = DurableValues.put(user, "gone/", 20, 4444, on(before));
            // batch-style puts through a reservation on each node; closed, the writer retired it: the restarted node's
            // memory is then all free for the puts below (a live holder's rest would be parked there, NodeIncarnationTest)
            StoreClient writer = StoreClient.builder(DurableValues.engine(engines), address).stagingBytes(1 << 20).connect();
            List<byte[]> both = DurableValues.put(writer, "both/", 20, 3333, ReplicateConfig.replicas(2));
            writer.close();
            master.kill();
            restarting.close(); // its process ends while the master is down: nothing of it reaches the master
            first.close();
            memory.fill((byte) 0x5A); // a new process's memory: none of the old bytes

            master = ChildJvm.start(DurableMasterProcess.class, dir.toString(), Integer.toString(port));
            master.awaitLine("LISTENING ", Duration.ofSeconds(60));
            DurableValues.assertReadBack(user, "killed/", values);
            TransferEngine second = nodeEngine(restartedPort);
            StoreClient restarted = StoreClient.builder(second, address).connect();
            SegmentSpec after = restarted.contribute(second.register(memory, Location.CPU, Permission.READ_WRITE));
            assertEquals(before.engineSegment(), after.engineSegment(), "the same engine address");
            assertEquals(before.base(), after.base(), "the same memory");
            StoreClient reader = StoreClient.builder(DurableValues.engine(engines), address).stagingBytes(1 << 20).connect();
            assertNotServed(reader, gone);
            DurableValues.assertReadBack(reader, "both/", both);
            // more than the old objects took, from the front of the same memory: their ranges are handed out again
            List<byte[]> fresh = DurableValues.put(reader, "new/", 60, 5555, on(after));
            DurableValues.assertReadBack(reader, "new/", fresh);
            assertNotServed(reader, gone);
            DurableValues.assertReadBack(user, "killed/", values);
            reader.close();
            user.close();
            restarted.close();
            node.close();
            second.close();
        } finally {
            master.close();
            engines.forEach(TransferEngine::close);
        }
    }

    private static ReplicateConfig on(SegmentSpec segment) {
        return ReplicateConfig.replicas(1).withPreferredSegments(List.of(segment.id()));
    }

    private static void assertNotServed(StoreClient reader, List<byte[]> gone) {
        for (int i = 0; i < gone.size(); i++) {
            String key = "gone/" + i;
            StoreException e = assertThrows(StoreException.class, () -> reader.get(key), key + " was served");
            assertEquals(StoreError.OBJECT_NOT_FOUND, e.error(), key + ": " + e.getMessage());
        }
    }

    /** An engine on control port {@code port} (0 = a free one): a node started again there has the same engine segment name. */
    private static TransferEngine nodeEngine(int port) {
        return TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.CONTROL_PORT, Integer.toString(port)).build());
    }
}

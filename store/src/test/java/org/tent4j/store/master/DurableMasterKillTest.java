package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;
import org.tent4j.testkit.ChildJvm;

/**
 * The master in a child JVM on its durable log, SIGKILLed right after the last put was acknowledged and started
 * again on the same dir and port: every acknowledged object reads back CRC-equal from the node, which kept its memory.
 */
class DurableMasterKillTest {
    @TempDir
    Path dir;

    @Test
    void everyAcknowledgedPutSurvivesSigkill() throws Exception {
        List<TransferEngine> engines = new ArrayList<>();
        ChildJvm master = ChildJvm.start(DurableMasterProcess.class, dir.toString(), "0");
        try {
            int port = Integer.parseInt(master.awaitLine("LISTENING ", Duration.ofSeconds(60)).split(" ")[1]);
            String address = "127.0.0.1:" + port;
            StoreClient node = StoreClient.builder(engine(engines), address).connect();
            StoreClient user = StoreClient.builder(engine(engines), address).stagingBytes(1 << 20).connect();
            node.contribute(4 << 20);
            Random rnd = new Random(2222);
            List<byte[]> values = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                byte[] v = new byte[1 + rnd.nextInt(32 << 10)];
                rnd.nextBytes(v);
                values.add(v);
                assertEquals(PutResult.STORED, user.put("killed/" + i, v, ReplicateConfig.replicas(1)));
            }
            master.kill();
            master = ChildJvm.start(DurableMasterProcess.class, dir.toString(), Integer.toString(port));
            master.awaitLine("LISTENING ", Duration.ofSeconds(60));
            for (int i = 0; i < values.size(); i++) {
                byte[] got = user.get("killed/" + i);
                assertEquals(crc(values.get(i)), crc(got), "killed/" + i);
                assertArrayEquals(values.get(i), got);
            }
            user.close();
            node.close();
        } finally {
            master.close();
            engines.forEach(TransferEngine::close);
        }
    }

    private static TransferEngine engine(List<TransferEngine> engines) {
        TransferEngine e = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
        engines.add(e);
        return e;
    }

    private static long crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return c.getValue();
    }
}

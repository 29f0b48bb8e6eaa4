package org.tent4j.store.master;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.TransferEngine;
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
            StoreClient node = StoreClient.builder(DurableValues.engine(engines), address).connect();
            StoreClient user = StoreClient.builder(DurableValues.engine(engines), address).stagingBytes(1 << 20).connect();
            node.contribute(4 << 20);
            List<byte[]> values = DurableValues.put(user, "killed/", 40, 2222);
            master.kill();
            master = ChildJvm.start(DurableMasterProcess.class, dir.toString(), Integer.toString(port));
            master.awaitLine("LISTENING ", Duration.ofSeconds(60));
            DurableValues.assertReadBack(user, "killed/", values);
            user.close();
            node.close();
        } finally {
            master.close();
            engines.forEach(TransferEngine::close);
        }
    }
}

package org.tent4j.integration.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Opcode;
import org.tent4j.testkit.servers.EtcdServer;

/**
 * Two agents in two JVMs: metadata through a real etcd or straight from the peer's listener, then WRITE with a
 * notification and READ back, checked by CRC on both sides.
 */
class CrossProcessAgentTest {
    private static final long SIZE = 1 << 20;

    private static EngineConfig.Builder cfg() {
        return EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, "tcp");
    }

    /** Writes 300001 bytes at offset 4099 with a notification, reads 200003 bytes from offset 700001, checks both. */
    private static XferRequest exchange(Agent initiator, AgentProcess.Child target, Arena arena) throws Exception {
        MemorySegment local = arena.allocate(SIZE, 4096);
        AgentTest.fill(local, 5);
        initiator.registerMem(DescriptorList.dram(local));
        MemorySegment src = local.asSlice(13, 300_001);
        XferRequest w = initiator.createXferReq(Opcode.WRITE, DescriptorList.dram(src),
                DescriptorList.of(MemoryType.DRAM, new Descriptor(target.address + 4099, 300_001, 0)), "target",
                XferOptions.notify("layer 7 done".getBytes(StandardCharsets.UTF_8)));
        assertEquals("tent4j", w.backend());
        w.post();
        assertEquals(XferState.DONE, w.await(Duration.ofSeconds(20)), () -> String.valueOf(w.error()));
        assertEquals("initiator:layer 7 done", target.ask("NOTES 1"));
        assertEquals(Long.toString(AgentTest.crc(src)), target.ask("CRC 4099 300001"));

        MemorySegment expected = arena.allocate(SIZE, 4096);
        AgentTest.fill(expected, 77);
        MemorySegment dst = local.asSlice(500_000, 200_003);
        XferRequest r = initiator.createXferReq(Opcode.READ, DescriptorList.dram(dst),
                DescriptorList.of(MemoryType.DRAM, new Descriptor(target.address + 700_001, 200_003, 0)), "target", XferOptions.NONE);
        r.post();
        assertEquals(XferState.DONE, r.await(Duration.ofSeconds(20)), () -> String.valueOf(r.error()));
        assertEquals(AgentTest.crc(expected.asSlice(700_001, 200_003)), AgentTest.crc(dst));
        assertEquals(200_003, r.telemetry().bytes());
        return r;
    }

    @Test
    void twoProcessesExchangeMetadataThroughEtcd() throws Exception {
        try (EtcdServer etcd = EtcdServer.launch();
             AgentProcess.Child target = new AgentProcess.Child("target", SIZE, EngineConfig.METADATA_URI + "=" + etcd.uri());
             Agent initiator = Agent.create(AgentConfig.of("initiator", cfg().set(EngineConfig.METADATA_URI, etcd.uri()).build()));
             Arena arena = Arena.ofShared()) {
            initiator.createBackend("tent4j", Map.of());
            assertEquals("target", initiator.fetchRemoteMD("target", Agent.FULL, Duration.ofSeconds(10)));
            exchange(initiator, target, arena);

            // the other way round: the target fetches the initiator's metadata from etcd and notifies it
            initiator.sendLocalMD();
            assertEquals("FETCHED", target.ask("FETCH initiator"));
            Map<String, List<byte[]>> notes = initiator.getNotifs();
            assertEquals("hello from target", new String(notes.get("target").getFirst(), StandardCharsets.UTF_8));

            NixlException missing = org.junit.jupiter.api.Assertions.assertThrows(NixlException.class,
                    () -> initiator.fetchRemoteMD("nobody", Agent.FULL, Duration.ofMillis(200)));
            assertEquals(NixlStatus.TIMEOUT, missing.status(), missing.getMessage());
        }
    }

    @Test
    void twoProcessesExchangeMetadataOverADirectSocketAndKeepItAcrossAPeerFailure() throws Exception {
        try (AgentProcess.Child target = new AgentProcess.Child("target", SIZE);
             Agent initiator = Agent.create(AgentConfig.of("initiator", cfg().build()));
             Arena arena = Arena.ofShared()) {
            initiator.createBackend("tent4j", Map.of("timeout", "5s"));
            assertEquals("target", initiator.fetchRemoteMD(target.host, target.port, Agent.FULL, Duration.ofSeconds(10)));
            XferRequest read = exchange(initiator, target, arena);

            target.kill();
            read.post();
            assertEquals(XferState.FAILED, read.await(Duration.ofSeconds(20)));
            NixlStatus why = read.error().status();
            assertTrue(why == NixlStatus.REMOTE_DISCONNECT || why == NixlStatus.TIMEOUT, read.error().getMessage());
            assertTrue(initiator.checkRemoteMD("target", null), "a failed transfer must not drop the peer's metadata");
            NixlException gone = org.junit.jupiter.api.Assertions.assertThrows(NixlException.class,
                    () -> initiator.fetchRemoteMD(target.host, target.port, Agent.FULL, Duration.ofSeconds(2)));
            assertEquals(NixlStatus.REMOTE_DISCONNECT, gone.status(), gone.getMessage());
        }
    }
}

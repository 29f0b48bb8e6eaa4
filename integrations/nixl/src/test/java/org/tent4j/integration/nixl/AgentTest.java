package org.tent4j.integration.nixl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Opcode;
import org.tent4j.integration.nixl.spi.OptionSpec;

/** The agent on real engines in one JVM: backends, registration, metadata, backend choice, request lifecycle. */
class AgentTest {
    private final List<Agent> agents = new ArrayList<>();
    private final Arena arena = Arena.ofShared();

    static EngineConfig engineConfig() {
        return EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, "tcp").build();
    }

    private Agent agent(String name, String... preference) {
        Agent a = Agent.create(AgentConfig.of(name, engineConfig()).withBackendPreference(preference));
        agents.add(a);
        return a;
    }

    @AfterEach
    void tearDown() {
        agents.forEach(Agent::close);
        arena.close();
    }

    static void fill(MemorySegment s, long seed) {
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, (i * 0x9E3779B97F4A7C15L) ^ seed);
        }
    }

    static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    private static NixlException fails(NixlStatus status, String fragment, Runnable r) {
        NixlException e = assertThrows(NixlException.class, r::run);
        assertEquals(status, e.status(), e.getMessage());
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
        return e;
    }

    private static XferState finish(XferRequest r) throws InterruptedException {
        XferState s = r.await(Duration.ofSeconds(10));
        assertEquals(XferState.DONE, s, () -> String.valueOf(r.error()));
        return s;
    }

    @Test
    void backendsAreDescribedBeforeCreationAndTheirOptionsValidated() {
        Agent a = agent("a");
        assertEquals(List.of("local-copy", "tent4j", "test-gated"), a.availableBackends());
        BackendDescription d = a.describeBackend("tent4j");
        assertTrue(d.supportsRemote() && d.supportsLocal() && d.supportsNotifications());
        assertEquals(List.of("transport", "timeout", "vram_kind"), d.options().stream().map(OptionSpec::key).toList());
        assertEquals("0", d.options().get(1).defaultValue());

        fails(NixlStatus.INVALID_PARAM, "has no option 'tranport' (it accepts [transport, timeout, vram_kind])",
                () -> a.createBackend("tent4j", Map.of("tranport", "tcp")));
        fails(NixlStatus.INVALID_PARAM, "option 'timeout' (duration): bad value 'soon'", () -> a.createBackend("tent4j", Map.of("timeout", "soon")));
        fails(NixlStatus.INVALID_PARAM, "does not run transport 'rdma'", () -> a.createBackend("tent4j", Map.of("transport", "rdma")));
        NixlException failed = fails(NixlStatus.BACKEND, "backend 'test-gated' failed to start: java.io.IOException: device /dev/gated0 missing",
                () -> a.createBackend("test-gated", Map.of("fail_start", "true")));
        assertEquals("device /dev/gated0 missing", failed.getCause().getMessage());
        fails(NixlStatus.NOT_FOUND, "no backend 'TENT4J'", () -> a.describeBackend("TENT4J"));

        BackendHandle h = a.createBackend("tent4j", Map.of("timeout", "5s"));
        assertEquals(Map.of("transport", "", "timeout", "5s", "vram_kind", "cuda"), a.backendParams(h));
        fails(NixlStatus.NOT_ALLOWED, "already has backend 'tent4j'", () -> a.createBackend("tent4j", Map.of()));
    }

    @Test
    void theBackendChoiceIsDeterministicAndExplained() throws Exception {
        Agent a = agent("a");
        a.createBackend("tent4j", Map.of());
        a.createBackend("local-copy", Map.of());
        MemorySegment src = arena.allocate(1 << 20, 64);
        MemorySegment dst = arena.allocate(1 << 20, 64);
        fill(src, 1);
        a.registerMem(DescriptorList.dram(src, dst));
        DescriptorList from = DescriptorList.dram(src.asSlice(0, 4096), src.asSlice(8192, 300_000));
        DescriptorList to = DescriptorList.dram(dst.asSlice(4096, 4096), dst.asSlice(500_000, 300_000));

        // no preference: created backends by id, the first that can carry it
        for (int i = 0; i < 3; i++) {
            XferRequest r = a.createXferReq(Opcode.WRITE, from, to, "a", XferOptions.NONE);
            assertEquals("local-copy", r.backend(), r.selectionReason());
            r.post();
            finish(r);
            r.release();
        }
        assertEquals(crc(src.asSlice(8192, 300_000)), crc(dst.asSlice(500_000, 300_000)));

        // a request's preference goes first
        XferRequest t = a.createXferReq(Opcode.WRITE, from, to, "a", XferOptions.backends("tent4j"));
        assertEquals("tent4j", t.backend());
        t.post();
        finish(t);

        // a notification needs a notifying backend: local-copy is skipped, saying why
        XferRequest n = a.createXferReq(Opcode.WRITE, from, to, "a", XferOptions.notify("x".getBytes(StandardCharsets.UTF_8)));
        assertEquals("tent4j", n.backend());
        assertTrue(n.selectionReason().contains("skipped {local-copy=no notifications}"), n.selectionReason());

        // memory registered with tent4j only is not covered by local-copy
        MemorySegment only = arena.allocate(64 << 10, 64);
        a.registerMem(DescriptorList.dram(only), List.of("tent4j"));
        XferRequest c = a.createXferReq(Opcode.READ, DescriptorList.dram(only.asSlice(0, 4096)), DescriptorList.dram(src.asSlice(0, 4096)), "a", XferOptions.NONE);
        assertEquals("tent4j", c.backend());
        assertTrue(c.selectionReason().contains("local-copy=local descriptor 0"), c.selectionReason());
        c.post();
        finish(c);
        assertEquals(crc(src.asSlice(0, 4096)), crc(only.asSlice(0, 4096)));

        // the agent's preference, when the request names none
        Agent b = agent("b", "tent4j");
        b.createBackend("local-copy", Map.of());
        b.createBackend("tent4j", Map.of());
        MemorySegment x = arena.allocate(8192, 64);
        b.registerMem(DescriptorList.dram(x));
        assertEquals("tent4j", b.createXferReq(Opcode.WRITE, DescriptorList.dram(x.asSlice(0, 4096)), DescriptorList.dram(x.asSlice(4096, 4096)), "b",
                XferOptions.NONE).backend());
        fails(NixlStatus.NOT_FOUND, "has not created", () -> b.createXferReq(Opcode.WRITE, DescriptorList.dram(x.asSlice(0, 4096)),
                DescriptorList.dram(x.asSlice(4096, 4096)), "b", XferOptions.backends("test-gated")));
    }

    @Test
    void preparedListsBuildRequestsByIndexMergingContiguousNeighbours() throws Exception {
        Agent a = agent("a");
        Agent b = agent("b");
        a.createBackend("tent4j", Map.of());
        b.createBackend("tent4j", Map.of());
        int block = 16 << 10;
        MemorySegment la = arena.allocate(8L * block, 4096);
        MemorySegment rb = arena.allocate(8L * block, 4096);
        fill(la, 3);
        a.registerMem(DescriptorList.dram(la));
        b.registerMem(DescriptorList.dram(rb));
        assertEquals("b", a.loadRemoteMD(b.getLocalMD()));

        PreparedList local = a.prepXferDlist("", DescriptorList.blocks(MemoryType.DRAM, la.address(), block, 8, 0));
        PreparedList remote = a.prepXferDlist("b", DescriptorList.blocks(MemoryType.DRAM, rb.address(), block, 8, 0));
        // 0-3 onto 4-7 contiguous on both sides: one descriptor; then 7 onto 0 alone
        XferRequest r = a.makeXferReq(Opcode.WRITE, local, new int[]{0, 1, 2, 3, 7}, remote, new int[]{4, 5, 6, 7, 0}, XferOptions.NONE);
        r.post();
        finish(r);
        XferTelemetry t = r.telemetry();
        assertEquals(2, t.descriptors());
        assertEquals(5L * block, t.bytes());
        assertTrue(t.transferNanos() >= t.postNanos() && t.postNanos() > 0, t.toString());
        assertEquals(crc(la.asSlice(0, 4L * block)), crc(rb.asSlice(4L * block, 4L * block)));
        assertEquals(crc(la.asSlice(7L * block, block)), crc(rb.asSlice(0, block)));

        XferRequest unmerged = a.makeXferReq(Opcode.WRITE, local, new int[]{0, 1, 2, 3, 7}, remote, new int[]{4, 5, 6, 7, 0},
                XferOptions.NONE.withoutMerging());
        assertEquals(5, unmerged.telemetry().descriptors());

        // reposting a terminal request moves the data again
        fill(la, 4);
        assertEquals(XferState.DONE, r.post() == XferState.DONE ? XferState.DONE : finish(r));
        assertEquals(2, r.telemetry().posts());
        assertEquals(crc(la.asSlice(0, 4L * block)), crc(rb.asSlice(4L * block, 4L * block)));

        fails(NixlStatus.MISMATCH, "entry 0", () -> a.makeXferReq(Opcode.WRITE, local, new int[]{0}, a.prepXferDlist("b",
                DescriptorList.of(MemoryType.DRAM, new Descriptor(rb.address(), block * 2L, 0))), new int[]{0}, XferOptions.NONE));
        fails(NixlStatus.INVALID_PARAM, "outside lists", () -> a.makeXferReq(Opcode.WRITE, local, new int[]{8}, remote, new int[]{0}, XferOptions.NONE));
        fails(NixlStatus.NOT_FOUND, "agent 'b' descriptor 0", () -> a.createXferReq(Opcode.WRITE, DescriptorList.dram(la.asSlice(0, 64)),
                DescriptorList.of(MemoryType.DRAM, new Descriptor(rb.address() + rb.byteSize(), 64, 0)), "b", XferOptions.NONE));
    }

    @Test
    void aRequestIsRepostedOnlyOnceTerminalAndReleaseAbortsItInFlight() throws Exception {
        GatedBackendProvider.GATE = new CountDownLatch(1);
        Agent a = agent("a");
        a.createBackend("test-gated", Map.of());
        MemorySegment m = arena.allocate(8192, 64);
        fill(m.asSlice(0, 4096), 9);
        a.registerMem(DescriptorList.dram(m));
        XferRequest r = a.createXferReq(Opcode.WRITE, DescriptorList.dram(m.asSlice(0, 4096)), DescriptorList.dram(m.asSlice(4096, 4096)), "a", XferOptions.NONE);
        assertEquals(XferState.NOT_POSTED, r.status());
        assertEquals(XferState.IN_PROGRESS, r.post());
        fails(NixlStatus.REPOST_ACTIVE, "still in flight", r::post);
        GatedBackendProvider.GATE.countDown();
        assertEquals(XferState.DONE, r.status());
        assertEquals(crc(m.asSlice(0, 4096)), crc(m.asSlice(4096, 4096)));
        assertEquals(XferState.DONE, r.post());

        GatedBackendProvider.GATE = new CountDownLatch(1);
        XferRequest inFlight = a.createXferReq(Opcode.READ, DescriptorList.dram(m.asSlice(0, 64)), DescriptorList.dram(m.asSlice(64, 64)), "a", XferOptions.NONE);
        inFlight.post();
        inFlight.release();
        assertEquals(XferState.FAILED, inFlight.status());
        assertEquals(NixlStatus.CANCELED, inFlight.error().status());
        fails(NixlStatus.NOT_ALLOWED, "released", inFlight::post);

        Agent b = agent("b");
        b.createBackend("test-gated", Map.of("abortable", "false"));
        b.registerMem(DescriptorList.dram(arena.allocate(128, 64)));
        MemorySegment bm = arena.allocate(128, 64);
        b.registerMem(DescriptorList.dram(bm));
        XferRequest stuck = b.createXferReq(Opcode.WRITE, DescriptorList.dram(bm.asSlice(0, 64)), DescriptorList.dram(bm.asSlice(64, 64)), "b", XferOptions.NONE);
        stuck.post();
        fails(NixlStatus.BACKEND, "could not be aborted", stuck::release);
        GatedBackendProvider.GATE.countDown();
    }

    @Test
    void metadataLoadsFullOrPartialAndIsDroppedOnlyWhenInvalidated() throws Exception {
        Agent a = agent("a");
        Agent b = agent("b");
        a.createBackend("tent4j", Map.of());
        b.createBackend("tent4j", Map.of());
        b.createBackend("local-copy", Map.of());
        MemorySegment la = arena.allocate(64 << 10, 64);
        MemorySegment r1 = arena.allocate(64 << 10, 64);
        MemorySegment r2 = arena.allocate(64 << 10, 64);
        fill(la, 11);
        a.registerMem(DescriptorList.dram(la));
        b.registerMem(DescriptorList.dram(r1, r2));

        // partial metadata without connection info cannot be used before a's tent4j knows b's endpoint; nothing is kept
        fails(NixlStatus.NOT_FOUND, "no connection info of agent 'b'", () -> a.loadRemoteMD(b.getLocalPartialMD(DescriptorList.dram(r2), false)));
        assertFalse(a.checkRemoteMD("b", null));

        // partial: only r2, with connection info; r1 is not known to a
        assertEquals("b", a.loadRemoteMD(b.getLocalPartialMD(DescriptorList.dram(r2.asSlice(100, 10)), true)));
        assertTrue(a.checkRemoteMD("b", DescriptorList.dram(r2)));
        assertFalse(a.checkRemoteMD("b", DescriptorList.dram(r1)));
        XferRequest w = a.createXferReq(Opcode.WRITE, DescriptorList.dram(la), DescriptorList.dram(r2), "b",
                XferOptions.notify("kv ready".getBytes(StandardCharsets.UTF_8)));
        w.post();
        finish(w);
        assertEquals(crc(la), crc(r2));
        a.genNotif("b", "alone".getBytes(StandardCharsets.UTF_8));
        Map<String, List<byte[]>> got = b.getNotifs();
        assertEquals(List.of("a"), List.copyOf(got.keySet()));
        // DONE means the peer has the transfer's notification, so the stand-alone one sent after it comes second
        assertEquals(List.of("kv ready", "alone"), got.get("a").stream().map(x -> new String(x, StandardCharsets.UTF_8)).toList());
        assertTrue(b.getNotifs().isEmpty());

        // the full metadata adds r1
        a.loadRemoteMD(b.getLocalMD());
        assertTrue(a.checkRemoteMD("b", DescriptorList.dram(r1, r2)));

        a.invalidateRemoteMD("b");
        assertFalse(a.checkRemoteMD("b", null));
        fails(NixlStatus.NOT_FOUND, "no metadata of 'b'", () -> a.prepXferDlist("b", DescriptorList.dram(r1)));
        fails(NixlStatus.NOT_FOUND, "no metadata of 'b'", () -> a.invalidateRemoteMD("b"));

        fails(NixlStatus.INVALID_PARAM, "no NXAM header", () -> a.loadRemoteMD(new byte[16]));
        byte[] full = b.getLocalMD();
        fails(NixlStatus.INVALID_PARAM, "bad agent metadata", () -> a.loadRemoteMD(java.util.Arrays.copyOf(full, full.length - 3)));
        fails(NixlStatus.INVALID_PARAM, "its own metadata", () -> a.loadRemoteMD(a.getLocalMD()));
        fails(NixlStatus.INVALID_PARAM, "overlaps", () -> a.registerMem(DescriptorList.dram(la.asSlice(10, 10))));
        fails(NixlStatus.NOT_FOUND, "deregister exactly", () -> a.deregisterMem(DescriptorList.dram(la.asSlice(0, 10))));
        fails(NixlStatus.BACKEND, "metadata.uri=p2p", a::sendLocalMD);
        a.deregisterMem(DescriptorList.dram(la));
    }
}

package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.runtime.schedule.PathGroup;

class PolicyTest {
    private static final String RULES = """
            [{"name": "bulk", "min_size": "1m", "transports": ["inproc-b", "inproc"]},
             {"name": "pinned", "priority": "low", "transports": ["inproc"], "devices": ["p2"]},
             {"name": "small", "max_size": 65535, "priority": "high", "transports": ["inproc"]}]
            """;
    @RegisterExtension
    final OpenEngines engines = new OpenEngines();

    @Test
    void rulesMatchInOrderANamedPolicyOverridesAndExplainTellsWhy(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("engine.json");
        Files.writeString(file, "{\"policy\": " + RULES + ", \"transports\": {\"inproc\": {\"paths\": 4}}}");
        TransferEngine target = engines.open(EngineTest.cfg());
        TransferEngine initiator = engines.open(EngineTest.cfg().file(file));
        RegisteredMemory remote = target.allocate(4 << 20, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(4 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment(target.segmentName());

        TransferRequest big = TransferRequest.write(local.segment(), seg, remote.address());
        TransferPlan bulk = initiator.explain(big);
        assertEquals("bulk", bulk.policy(), bulk.toString());
        assertEquals("inproc-b", bulk.transport());
        assertEquals(List.of("inproc-b", "inproc"), bulk.candidates().stream().map(TransferPlan.Candidate::transport).toList());
        assertEquals(64, bulk.slices());
        assertNull(bulk.error());

        TransferPlan small = initiator.explain(TransferRequest.write(local.segment().asSlice(0, 4096), seg, remote.address()));
        assertEquals("small", small.policy());
        assertEquals("inproc", small.transport());

        TransferPlan none = initiator.explain(TransferRequest.write(local.segment().asSlice(0, 100_000), seg, remote.address()));
        assertNull(none.policy(), "a 100 kB request matches no rule: " + none);

        TransferRequest pinned = TransferRequest.builder(Opcode.WRITE, local.segment(), seg, remote.address()).policy("pinned").build();
        TransferPlan p = initiator.explain(pinned);
        assertEquals("pinned", p.policy());
        assertEquals(List.of("p2"), p.paths());
        TransferStatus s = initiator.transfer(pinned);
        assertEquals(TransferState.COMPLETED, s.state(), s.message());
        PathGroup g = ((TransferEngineImpl) initiator).router().group((RemoteSegment) seg, "inproc");
        assertEquals(64, (long) g.path(2).completedSlices(), "the policy's devices did not restrict the paths");
        assertEquals(0, (long) g.path(0).completedSlices() + (long) g.path(1).completedSlices() + (long) g.path(3).completedSlices());
        // once connected, explain lists the connection's paths (tcp: its rails and lanes), within what the policy allows
        TransferRequest small4k = TransferRequest.write(local.segment().asSlice(0, 4096), seg, remote.address());
        assertEquals(List.of("p0", "p1", "p2", "p3"), initiator.explain(small4k).paths(), initiator.explain(small4k).toString());
        assertEquals(List.of("p2"), initiator.explain(pinned).paths());

        TransferStatus unknown = initiator.transfer(TransferRequest.builder(Opcode.WRITE, local.segment(), seg, remote.address())
                .policy("nope").build());
        assertEquals(TransferState.INVALID, unknown.state());
        assertEquals(ErrorCode.INVALID_ARGUMENT, unknown.error());
        assertTrue(unknown.message().contains("no policy named 'nope'"), unknown.message());

        TransferPlan bad = initiator.explain(TransferRequest.write(local.segment(), seg, 0x10));
        assertFalse(bad.error() == null, bad.toString());
        assertTrue(bad.error().contains("0x10"), bad.error());
    }

    @Test
    void badRulesAreRejectedNamingTheRule() {
        for (String[] c : new String[][]{
                {"[{\"name\": \"x\", \"transports\": [\"inproc\"], \"colour\": \"red\"}]", "unknown field 'colour'"},
                {"[{\"transports\": [\"inproc\"]}]", "'name' is required"},
                {"[{\"name\": \"x\", \"transports\": [\"warp\"]}]", "no transport 'warp'"},
                {"[{\"name\": \"x\", \"transports\": []}]", "at least one transport"},
                {"[{\"name\": \"x\", \"transports\": [\"inproc\"], \"priority\": \"urgent\"}]", "priority"},
                {"{\"name\": \"x\"}", "JSON array"},
                {"[{", "not valid JSON"}}) {
            ConfigException e = assertThrows(ConfigException.class, () -> engines.open(EngineTest.cfg().set("policy", c[0])), c[0]);
            assertEquals("policy", e.key());
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
        }
    }
}

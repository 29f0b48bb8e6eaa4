package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MetadataNamespace;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/** The metadata-blob and namespace additions of te-api, on real engines (p2p and an in-JVM store). */
class MetadataExchangeTest {
    @RegisterExtension
    final OpenEngines engines = new OpenEngines();

    private static TransferException fails(ErrorCode code, String fragment, Runnable r) {
        TransferException e = assertThrows(TransferException.class, r::run);
        assertEquals(code, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
        return e;
    }

    @Test
    void aSegmentOpenedFromItsBlobCarriesTransfersAndCloseInvalidatesIt() {
        TransferEngine target = engines.open(EngineTest.cfg());
        TransferEngine initiator = engines.open(EngineTest.cfg());
        RegisteredMemory remote = target.allocate(256 << 10, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(256 << 10, Location.CPU, Permission.READ_WRITE);
        EngineTest.fill(local.segment(), 5);

        SegmentHandle seg = initiator.openSegment(target.segmentBlob());
        assertEquals(target.segmentName(), seg.name());
        TransferStatus w = initiator.transfer(TransferRequest.write(local.segment(), seg, remote.address()));
        assertEquals(TransferState.COMPLETED, w.state(), w.message());
        assertEquals(EngineTest.crc(local.segment()), EngineTest.crc(remote.segment()));

        // a newer blob (one more buffer) replaces the cached descriptor of the open segment
        RegisteredMemory second = target.allocate(4096, Location.CPU, Permission.READ_WRITE);
        assertSame(seg, initiator.openSegment(target.segmentBlob()));
        assertEquals(2, initiator.segmentInfo(seg).buffers().size());
        assertEquals(TransferState.COMPLETED, initiator.transfer(TransferRequest.write(local.segment().asSlice(0, 4096), seg, second.address())).state());

        initiator.closeSegment(seg);
        fails(ErrorCode.UNKNOWN_SEGMENT, target.segmentName(), () -> initiator.segmentInfo(seg));
        assertNotSame(seg, initiator.openSegment(target.segmentBlob()));
        assertSame(initiator.localSegment(), initiator.openSegment(initiator.segmentBlob()));
    }

    @Test
    void aBadBlobIsRejectedNamingWhatIsWrong() {
        TransferEngine e = engines.open(EngineTest.cfg());
        byte[] good = e.segmentBlob();
        fails(ErrorCode.INVALID_ARGUMENT, "too short", () -> e.openSegment(new byte[3]));
        fails(ErrorCode.INVALID_ARGUMENT, "T4SB", () -> e.openSegment("{\"name\":\"x\"}".getBytes(StandardCharsets.UTF_8)));
        byte[] future = good.clone();
        future[5] = 9;
        fails(ErrorCode.INVALID_ARGUMENT, "format version 9", () -> e.openSegment(future));
        fails(ErrorCode.INVALID_ARGUMENT, "segment blob", () -> e.openSegment(Arrays.copyOf(good, good.length / 2)));
        fails(ErrorCode.INVALID_ARGUMENT, "exceeds", () -> e.openSegment(Arrays.copyOf(good, MetadataNamespace.MAX_VALUE + 1)));
    }

    @Test
    void blobsAreFetchedStraightFromAPeersControlPlane() {
        TransferEngine owner = engines.open(EngineTest.cfg());
        TransferEngine peer = engines.open(EngineTest.cfg());
        assertEquals(owner.segmentName(), owner.controlEndpoint());
        String[] hp = owner.controlEndpoint().split(":");
        String host = hp[0];
        int port = Integer.parseInt(hp[1]);
        byte[] agent = "agent metadata".getBytes(StandardCharsets.UTF_8);
        owner.offerBlob("agent.a", () -> agent);

        assertArrayEquals(agent, peer.fetchBlob(host, port, "agent.a", Duration.ofSeconds(5)));
        SegmentHandle seg = peer.openSegment(peer.fetchBlob(host, port, TransferEngine.SEGMENT_BLOB, Duration.ofSeconds(5)));
        assertEquals(owner.segmentName(), seg.name());

        fails(ErrorCode.UNKNOWN_SEGMENT, "no blob under label 'nothing'", () -> peer.fetchBlob(host, port, "nothing", Duration.ofSeconds(5)));
        owner.offerBlob("agent.a", null);
        fails(ErrorCode.UNKNOWN_SEGMENT, "agent.a", () -> peer.fetchBlob(host, port, "agent.a", Duration.ofSeconds(5)));
        fails(ErrorCode.INVALID_ARGUMENT, "label 'a b'", () -> owner.offerBlob("a b", () -> agent));
        fails(ErrorCode.INVALID_ARGUMENT, "own segment blob", () -> owner.offerBlob(TransferEngine.SEGMENT_BLOB, () -> agent));
        fails(ErrorCode.INVALID_ARGUMENT, "host:port", () -> peer.fetchBlob(host, 0, "agent.a", Duration.ofSeconds(1)));
    }

    @Test
    void namespacesKeepKeysApartAndAwaitSeesALaterPut() throws Exception {
        TransferEngine a = engines.open(EngineTest.cfg().set(EngineConfig.METADATA_URI, "memory://ns1").set(EngineConfig.SEGMENT_NAME, "a"));
        TransferEngine b = engines.open(EngineTest.cfg().set(EngineConfig.METADATA_URI, "memory://ns1").set(EngineConfig.SEGMENT_NAME, "b"));
        MetadataNamespace na = a.metadataNamespace("nixl");
        MetadataNamespace nb = b.metadataNamespace("nixl");
        MetadataNamespace other = b.metadataNamespace("other");
        byte[] v = {1, 2, 3};
        na.put("agents/a/full", v, Duration.ZERO);
        assertArrayEquals(v, nb.get("agents/a/full").orElseThrow());
        assertEquals(Optional.empty(), other.get("agents/a/full"));

        CompletableFuture<byte[]> waiting = CompletableFuture.supplyAsync(() -> nb.await("agents/late", Duration.ofSeconds(10)));
        na.put("agents/late", v, Duration.ZERO);
        assertArrayEquals(v, waiting.get());
        fails(ErrorCode.TIMEOUT, "agents/never", () -> nb.await("agents/never", Duration.ofMillis(50)));

        assertTrue(nb.delete("agents/a/full"));
        assertFalse(na.get("agents/a/full").isPresent());
        fails(ErrorCode.INVALID_ARGUMENT, "key '../x'", () -> na.get("../x"));
        fails(ErrorCode.INVALID_ARGUMENT, "bytes, more than", () -> na.put("big", new byte[MetadataNamespace.MAX_VALUE + 1], Duration.ZERO));
        fails(ErrorCode.INVALID_ARGUMENT, "label 'a/b'", () -> a.metadataNamespace("a/b"));

        TransferEngine p2p = engines.open(EngineTest.cfg());
        fails(ErrorCode.METADATA_UNAVAILABLE, "metadata.uri=p2p", () -> p2p.metadataNamespace("nixl"));
    }
}

package org.tent4j.integration.nixl.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.integration.nixl.Descriptor;
import org.tent4j.integration.nixl.MemoryType;
import org.tent4j.integration.nixl.NixlException;
import org.tent4j.integration.nixl.NixlStatus;
import org.tent4j.integration.nixl.spi.BackendContext;
import org.tent4j.integration.nixl.spi.BackendOptions;

/** A peer's FILE public data is hostile input: every malformed or out-of-segment value is refused naming what was wrong. */
class Tent4jBackendPublicDataTest {

    private static byte[] publicData(long base, int pathLength, String path) {
        byte[] p = path.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(12 + p.length).putLong(base).putInt(pathLength).put(p).array();
    }

    @Test
    void malformedOrOutOfSegmentFilePublicDataIsRefused() {
        EngineConfig config = EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, "tcp").build();
        try (TransferEngine peer = TransferEngine.create(config); TransferEngine mine = TransferEngine.create(config)) {
            Tent4jBackendProvider provider = new Tent4jBackendProvider();
            BackendOptions options = BackendOptions.resolve(provider.id(), provider.options(), Map.of());
            try (Tent4jBackend backend = new Tent4jBackend(new BackendContext() {
                @Override
                public String agentName() {
                    return "a";
                }

                @Override
                public BackendOptions options() {
                    return options;
                }

                @Override
                public TransferEngine engine() {
                    return mine;
                }
            })) {
                backend.loadRemoteConnectionInfo("b", peer.segmentBlob());
                Descriptor d = new Descriptor(4096, 4096, 7);
                refused(backend, d, new byte[11], NixlStatus.INVALID_PARAM, "agent 'b' FILE 0x1000+4096@7: bad public data of 11 bytes");
                refused(backend, d, publicData(1L << 60, 5000, "/x"), NixlStatus.INVALID_PARAM, "bad public data of 14 bytes");
                refused(backend, d, publicData(1L << 60, -1, "/x"), NixlStatus.INVALID_PARAM, "bad public data of 14 bytes");
                refused(backend, d, publicData(1L << 60, 3, "/x"), NixlStatus.INVALID_PARAM, "bad public data of 14 bytes");
                refused(backend, d, publicData(Long.MAX_VALUE - 10, 2, "/x"), NixlStatus.INVALID_PARAM,
                        "agent 'b' FILE fd 7 (/x): base 0x7ffffffffffffff5 + offset 4096 overflows");
                // well formed, but the peer's segment holds no file there
                refused(backend, d, publicData(1L << 60, 2, "/x"), NixlStatus.MISMATCH, "agent 'b' FILE fd 7 (/x) is not in its segment");
            }
        }
    }

    private static void refused(Tent4jBackend backend, Descriptor d, byte[] data, NixlStatus status, String fragment) {
        NixlException e = assertThrows(NixlException.class, () -> backend.loadRemote("b", d, MemoryType.FILE, data));
        assertEquals(status, e.status(), e.getMessage());
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }
}

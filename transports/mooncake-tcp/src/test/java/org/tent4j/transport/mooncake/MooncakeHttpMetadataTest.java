package org.tent4j.transport.mooncake;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Mooncake's HTTP metadata server as the reference describes it (its Go example: {@code GET/PUT/DELETE /metadata
 * ?key=...}, an in-memory map, 404 "metadata not found"), written for the test with the JDK's HTTP server; and both
 * directions through it in Mooncake's key layout.
 */
class MooncakeHttpMetadataTest {
    private final Map<String, byte[]> keys = new ConcurrentHashMap<>();
    private HttpServer server;
    @AutoClose
    private Tent4jSide side;
    @AutoClose
    private FakeMooncakeTarget fake;

    private String endpoint() throws IOException {
        if (server == null) {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
            server.createContext("/metadata", this::serve);
            server.start();
        }
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/metadata";
    }

    @AfterEach
    void stopServer() {
        if (server != null) {
            server.stop(0);
        }
    }

    private void serve(HttpExchange x) throws IOException {
        String query = x.getRequestURI().getRawQuery();
        String key = query != null && query.startsWith("key=")
                ? URLDecoder.decode(query.substring(4), StandardCharsets.UTF_8) : null;
        byte[] answer = new byte[0];
        int status = 200;
        switch (x.getRequestMethod()) {
            case "GET" -> {
                byte[] v = key == null ? null : keys.get(key);
                if (v == null) {
                    status = 404;
                    answer = "metadata not found".getBytes(StandardCharsets.UTF_8);
                } else {
                    answer = v;
                }
            }
            case "PUT" -> keys.put(key, x.getRequestBody().readAllBytes());
            case "DELETE" -> keys.remove(key);
            default -> status = 405;
        }
        x.sendResponseHeaders(status, answer.length == 0 ? -1 : answer.length);
        try (OutputStream out = x.getResponseBody()) {
            out.write(answer);
        }
    }

    private static String string(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    private static long field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":(\\d+)").matcher(json);
        assertTrue(m.find(), () -> name + " in " + json);
        return Long.parseLong(m.group(1));
    }

    // ------------------------------------------------------------- a Mooncake initiator finds tent4j in the store

    @Test
    void anEnginePublishesItselfInMooncakesKeysAndAMooncakeInitiatorReachesIt() throws Exception {
        side = new Tent4jSide(Map.of("metadata", endpoint(), "name", "tent4j-kv", "cluster_id", "c1"),
                Duration.ofSeconds(5));
        String rpcMeta = string(keys.get("mooncake/c1/rpc_meta/tent4j-kv"));
        assertTrue(rpcMeta.contains("\"ip_or_host_name\":\"127.0.0.1\""), rpcMeta);
        assertEquals(side.attribute(MooncakeTcpTransport.ATTR_HANDSHAKE_PORT), field(rpcMeta, "rpc_port"),
                "rpc_meta points at the handshake socket, which runs whenever a store is set");
        assertTrue(string(keys.get("mooncake/c1/ram/tent4j-kv")).contains("\"buffers\":[]"));

        LocalBuffer target = side.allocate(1 << 20, Permission.READ_WRITE);
        String descriptor = string(keys.get("mooncake/c1/ram/tent4j-kv"));
        assertTrue(descriptor.contains("\"name\":\"tent4j-kv\"") && descriptor.contains("\"protocol\":\"tcp\""),
                descriptor);
        assertEquals(target.address(), field(descriptor, "addr"), "republished on registration: " + descriptor);
        assertEquals(2, field(descriptor, "tcp_proto_version"));

        // what a Mooncake initiator does next: the host from rpc_meta, the port from the descriptor
        byte[] payload = new byte[4096];
        Arrays.fill(payload, (byte) 0x5e);
        assertArrayEquals(new String[]{MooncakePeerTest.GOLDEN_OK, MooncakePeerTest.GOLDEN_OK}, FakeMooncakeTarget.writeThenReadBack(
                (int) field(descriptor, "tcp_data_port"), target.address() + 8, payload));

        side.unregister(target);
        assertTrue(string(keys.get("mooncake/c1/ram/tent4j-kv")).contains("\"buffers\":[]"),
                "republished on unregistration");
        side.close();
        side = null;
        assertFalse(keys.containsKey("mooncake/c1/ram/tent4j-kv"), "removed at close");
        assertFalse(keys.containsKey("mooncake/c1/rpc_meta/tent4j-kv"), "removed at close");
        assertTrue(keys.isEmpty(), keys.keySet().toString());
    }

    @Test
    void anUnreachableStoreKeepsTheTransportFromStartingNamingIt() throws Exception {
        String endpoint = endpoint();
        server.stop(0);
        server = null;
        TransferException e = assertThrows(TransferException.class,
                () -> new Tent4jSide(Map.of("metadata", endpoint), Duration.ofSeconds(5)));
        assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains(endpoint) && e.getMessage().contains("mooncake/ram/tent4j-node"),
                e.getMessage());
    }

    // ------------------------------------------------------------- tent4j finds a Mooncake engine in the store

    @Test
    void tent4jResolvesAMooncakeSegmentFromTheStoreAndMovesBytes() throws Exception {
        fake = new FakeMooncakeTarget(1 << 20);
        keys.put("mooncake/ram/mooncake-node", fake.descriptorJson(2).getBytes(StandardCharsets.UTF_8));
        keys.put("mooncake/rpc_meta/mooncake-node",
                "{\"ip_or_host_name\":\"127.0.0.1\",\"rpc_port\":15001}\n".getBytes(StandardCharsets.UTF_8));
        side = new Tent4jSide(Map.of("lanes", "1"), Duration.ofSeconds(5));
        SegmentDescriptor peer;
        try (MooncakeMetadata store = MooncakeMetadata.open(endpoint(), "")) {
            MooncakeSegmentDescriptor d = store.segment("mooncake-node");
            peer = d.toSegmentDescriptor(store.rpcMeta("mooncake-node").host(), "mooncake-machine");
        }
        PeerConnection c = side.transport.connect(peer);
        TestLocalMemory.Buffer local = side.allocate(8192, Permission.READ_WRITE);
        Tent4jSide.fill(local.segment(), 5);
        TestSlice write = new TestSlice(Opcode.WRITE, local, 0, peer.buffers().getFirst(), FakeMooncakeTarget.BASE + 1,
                4096, System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
        c.post(write);
        write.result().get(10, TimeUnit.SECONDS);
        assertEquals(Tent4jSide.crc(local.segment().asSlice(0, 4096)), Tent4jSide.crc(fake.memory, 1, 4096));
    }

    @Test
    void aMissingOrMalformedMooncakeSegmentFailsNamingTheKey() throws Exception {
        keys.put("mooncake/ram/broken", "{\"name\":\"broken\",\"protocol\":\"tcp\",\"tcp_data_port\":0,\"buffers\":[]}"
                .getBytes(StandardCharsets.UTF_8));
        try (MooncakeMetadata store = MooncakeMetadata.open(endpoint(), null)) {
            TransferException absent = assertThrows(TransferException.class, () -> store.segment("nobody"));
            assertEquals(ErrorCode.UNKNOWN_SEGMENT, absent.code());
            assertTrue(absent.getMessage().contains("key mooncake/ram/nobody is absent"), absent.getMessage());
            TransferException broken = assertThrows(TransferException.class, () -> store.segment("broken"));
            assertEquals(ErrorCode.PROTOCOL, broken.code());
            assertTrue(broken.getMessage().contains("key mooncake/ram/broken")
                    && broken.getMessage().contains("field tcp_data_port 0 is outside [1, 65535]"), broken.getMessage());
        }
        for (String unsupported : new String[]{"etcd://127.0.0.1:2379", "redis://127.0.0.1:6379", "P2PHANDSHAKE"}) {
            TransferException e = assertThrows(TransferException.class, () -> MooncakeMetadata.open(unsupported, ""));
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), unsupported);
        }
    }
}

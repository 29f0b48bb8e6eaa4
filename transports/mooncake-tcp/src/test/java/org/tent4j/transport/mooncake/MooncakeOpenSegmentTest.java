package org.tent4j.transport.mooncake;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.testkit.servers.EtcdServer;
import org.tent4j.testkit.servers.RedisServer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.mooncake.Tent4jSide.crc;
import static org.tent4j.transport.mooncake.Tent4jSide.fill;

/**
 * {@code openSegment("<a Mooncake segment name>")} inside a real engine, the descriptor found where a Mooncake engine
 * keeps it: Mooncake's keys in a real etcd and a real Redis (written and read back here with each server's own
 * protocol, not tent4j's plugins, so a layout mistake on both sides cannot cancel out), and Mooncake's P2P handshake.
 * The target is the Mooncake target built from the protocol facts; every byte is CRC-checked.
 */
class MooncakeOpenSegmentTest {
    private static final String NAME = "mooncake-node";
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <T extends AutoCloseable> T closeLater(T t) {
        open.add(t);
        return t;
    }

    private TransferEngine engine(String metadataUri, String mooncakeMetadata) {
        return closeLater(TransferEngine.create(EngineConfig.builder().environment(Map.of())
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1").set(EngineConfig.TRANSFER_TIMEOUT, "10s")
                .set(EngineConfig.SLICE_SIZE, "1m").set(EngineConfig.METADATA_URI, metadataUri)
                .set(MooncakeTcpTransportProvider.OPTION_METADATA, mooncakeMetadata)
                .set("transports.mooncake-tcp.name", "tent4j-as-mooncake").build()));
    }

    @Test
    void anEngineOpensAMooncakeSegmentKeptInEtcd() throws Exception {
        EtcdServer etcd = closeLater(EtcdServer.launch());
        FakeMooncakeTarget fake = closeLater(new FakeMooncakeTarget(4L << 20));
        etcdPut(etcd, "mooncake/ram/" + NAME, fake.descriptorJson(2));
        etcdPut(etcd, "mooncake/rpc_meta/" + NAME, "{\"ip_or_host_name\":\"127.0.0.1\",\"rpc_port\":12001}");

        TransferEngine e = engine(etcd.uri(), etcd.uri());
        movesCrcCheckedBytes(e, fake);
        String published = etcdGet(etcd, "mooncake/ram/tent4j-as-mooncake");
        assertTrue(published.contains("\"tcp_data_port\":") && published.contains("\"tcp_proto_version\":2"),
                "this engine is published in Mooncake's layout for Mooncake initiators: " + published);
        assertTrue(etcdGet(etcd, "mooncake/rpc_meta/tent4j-as-mooncake").contains("\"rpc_port\":"));

        TransferException absent = assertThrows(TransferException.class, () -> e.openSegment("nobody"));
        assertEquals(ErrorCode.UNKNOWN_SEGMENT, absent.code());
        assertTrue(absent.getMessage().contains("nobody") && absent.getMessage().contains("mooncake/ram/nobody"),
                "both directories were asked, and the message says so: " + absent.getMessage());
    }

    @Test
    void anEngineOpensAMooncakeSegmentKeptInRedis() throws Exception {
        RedisServer redis = closeLater(RedisServer.launch());
        FakeMooncakeTarget fake = closeLater(new FakeMooncakeTarget(4L << 20));
        redis(redis, "SET", "mooncake/ram/" + NAME, fake.descriptorJson(2));
        redis(redis, "SET", "mooncake/rpc_meta/" + NAME, "{\"ip_or_host_name\":\"127.0.0.1\",\"rpc_port\":12001}");
        redis(redis, "SET", "mooncake/ram/broken", "{\"name\":\"broken\",\"protocol\":\"tcp\",\"tcp_data_port\":70000,\"buffers\":[]}");

        TransferEngine e = engine(redis.uriWithCredentials(), redis.uriWithCredentials());
        movesCrcCheckedBytes(e, fake);
        assertTrue(redis(redis, "GET", "mooncake/ram/tent4j-as-mooncake").contains("\"tcp_proto_version\":2"));

        TransferException broken = assertThrows(TransferException.class, () -> e.openSegment("broken"));
        assertEquals(ErrorCode.PROTOCOL, broken.code());
        assertTrue(broken.getMessage().contains("mooncake/ram/broken") && broken.getMessage().contains("tcp_data_port"),
                broken.getMessage());
    }

    @Test
    void aP2pEngineAsksTheMooncakeSegmentsHandshakeSocket() throws Exception {
        FakeMooncakeTarget fake = closeLater(new FakeMooncakeTarget(4L << 20));
        AtomicInteger metadataRequests = new AtomicInteger();
        ServerSocket handshake = closeLater(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
        Thread.ofVirtual().start(() -> serveHandshake(handshake, fake.descriptorJson(2), metadataRequests));

        TransferEngine e = engine("p2p", MooncakeMetadata.P2P);
        movesCrcCheckedBytes(e, "127.0.0.1:" + handshake.getLocalPort(), fake);
        assertEquals(1, metadataRequests.get(), "one Metadata exchange; the segment stays open afterwards");
    }

    private static void movesCrcCheckedBytes(TransferEngine e, FakeMooncakeTarget fake) {
        movesCrcCheckedBytes(e, NAME, fake);
    }

    private static void movesCrcCheckedBytes(TransferEngine e, String name, FakeMooncakeTarget fake) {
        for (int i = 0; i < fake.memory.length; i++) {
            fake.memory[i] = (byte) (i * 31 + (i >>> 12));
        }
        RegisteredMemory local = e.allocate(8L << 20, Location.CPU, Permission.READ_WRITE);
        fill(local.segment(), 5);
        SegmentHandle seg = e.openSegment(name);
        long size = (2L << 20) + 9;
        MemorySegment dst = local.segment().asSlice(4L << 20, size);
        TransferStatus r = e.transfer(TransferRequest.builder(Opcode.READ, dst, seg, FakeMooncakeTarget.BASE + 3)
                .require(MooncakeTcpTransportProvider.ID).build());
        assertEquals(TransferState.COMPLETED, r.state(), r.message());
        assertEquals(crc(MemorySegment.ofArray(fake.memory).asSlice(3, size)), crc(dst), "READ from Mooncake");

        MemorySegment src = local.segment().asSlice(1, size);
        TransferStatus w = e.transfer(TransferRequest.builder(Opcode.WRITE, src, seg, FakeMooncakeTarget.BASE + 11)
                .require(MooncakeTcpTransportProvider.ID).build());
        assertEquals(TransferState.COMPLETED, w.state(), w.message());
        assertEquals(crc(src), crc(MemorySegment.ofArray(fake.memory).asSlice(11, size)), "WRITE into Mooncake");
        assertEquals(6, fake.headers.size(), "1 MiB slices: each one Mooncake request on the wire");
    }

    /**
     * A Mooncake engine's handshake socket: Metadata frames (type 1) answered with its descriptor; anything else
     * (tent4j's own control-plane call to the same port, which the P2P directory makes first) dropped by closing, as
     * Mooncake's server drops frames it cannot parse.
     */
    private static void serveHandshake(ServerSocket server, String descriptor, AtomicInteger metadataRequests) {
        while (!server.isClosed()) {
            try (Socket s = server.accept()) {
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                long n = ByteBuffer.wrap(in.readNBytes(8)).order(ByteOrder.LITTLE_ENDIAN).getLong();
                if (n < 1 || n > (1 << 20)) {
                    continue;
                }
                byte[] body = in.readNBytes((int) n);
                if (body.length != n || body[0] != 1) {
                    continue;
                }
                metadataRequests.incrementAndGet();
                out.write(MooncakeHandshakeTest.frame(1, descriptor));
                out.flush();
            } catch (IOException e) {
                // closed at the end of the test, or a peer that hung up
            }
        }
    }

    // ----------------------------------------------------------------- each server's own protocol

    private static void etcdPut(EtcdServer etcd, String key, String value) throws Exception {
        etcdCall(etcd, "put", "{\"key\":\"" + b64(key) + "\",\"value\":\"" + b64(value) + "\"}");
    }

    private static String etcdGet(EtcdServer etcd, String key) throws Exception {
        String body = etcdCall(etcd, "range", "{\"key\":\"" + b64(key) + "\"}");
        int at = body.indexOf("\"value\":\"");
        assertTrue(at >= 0, () -> "etcd has no key " + key + ": " + body);
        String v = body.substring(at + 9, body.indexOf('"', at + 9));
        return new String(Base64.getDecoder().decode(v), StandardCharsets.UTF_8);
    }

    private static String etcdCall(EtcdServer etcd, String verb, String json) throws Exception {
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(etcd.clientUrl() + "/v3/kv/" + verb))
                    .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            return r.body();
        }
    }

    private static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    /** One RESP command (with AUTH first when the server wants it); a bulk or simple string answer. */
    private static String redis(RedisServer redis, String... command) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), redis.port())) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            if (redis.password() != null) {
                out.write(resp(redis.user() != null ? new String[]{"AUTH", redis.user(), redis.password()}
                        : new String[]{"AUTH", redis.password()}));
                assertEquals("+OK", line(in));
            }
            out.write(resp(command));
            String head = line(in);
            if (head.startsWith("$")) {
                int n = Integer.parseInt(head.substring(1));
                assertTrue(n >= 0, () -> "redis has no " + command[1]);
                String v = new String(in.readNBytes(n), StandardCharsets.UTF_8);
                in.readNBytes(2);
                return v;
            }
            assertTrue(head.startsWith("+"), head);
            return head.substring(1);
        }
    }

    private static byte[] resp(String... parts) {
        StringBuilder sb = new StringBuilder("*").append(parts.length).append("\r\n");
        for (String p : parts) {
            sb.append('$').append(p.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(p).append("\r\n");
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int c; (c = in.read()) != '\r'; ) {
            if (c < 0) {
                throw new IOException("redis closed the connection after: " + sb);
            }
            sb.append((char) c);
        }
        in.read();
        return sb.toString();
    }
}

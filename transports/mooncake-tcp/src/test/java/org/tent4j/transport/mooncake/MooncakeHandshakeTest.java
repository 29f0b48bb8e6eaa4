package org.tent4j.transport.mooncake;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
import static org.tent4j.transport.mooncake.FakeMooncakeTarget.hex;
import static org.tent4j.transport.mooncake.FakeMooncakeTarget.readAll;

/**
 * Mooncake's P2P handshake socket both ways, with the Mooncake side written from the reference (section 3.1: u64
 * little-endian length counting the type byte and the JSON, u8 type, JSON; one frame each way; the server shuts its
 * side down after answering) with java.net only, and JSON fields read with regular expressions, not the plugin's
 * parser.
 */
class MooncakeHandshakeTest {
    @AutoClose
    private Tent4jSide side;
    @AutoClose
    private FakeMooncakeTarget fake;
    @AutoClose
    private ServerSocket fakeHandshake;

    /** A tent4j transport with its handshake socket on a free port; returns that port. */
    private int tent4jWithHandshake() {
        side = new Tent4jSide(Map.of("handshake_port", "0"), Duration.ofSeconds(5));
        return side.attribute(MooncakeTcpTransport.ATTR_HANDSHAKE_PORT);
    }

    /** A frame as the C++ engine writes it. */
    static byte[] frame(int type, String json) {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        int t = type < 0 ? 0 : 1;
        ByteBuffer b = ByteBuffer.allocate(8 + t + body.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong((long) t + body.length);
        if (t == 1) {
            b.put((byte) type);
        }
        return b.put(body).array();
    }

    /** Reads one frame: the length prefix and then the body, type byte included. */
    static byte[] readFrame(InputStream in) throws IOException {
        byte[] prefix = readAll(in, 8);
        long n = ByteBuffer.wrap(prefix).order(ByteOrder.LITTLE_ENDIAN).getLong();
        assertTrue(n > 0 && n < (1 << 20), "frame length " + n);
        return readAll(in, (int) n);
    }

    private static long field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":(\\d+)").matcher(json);
        assertTrue(m.find(), () -> name + " in " + json);
        return Long.parseLong(m.group(1));
    }

    private Socket dial(int port) throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
        s.setSoTimeout(10_000);
        return s;
    }

    // ----------------------------------------------------------------- a Mooncake initiator in P2P mode reaches tent4j

    @Test
    void aP2pMooncakeInitiatorFetchesTheDescriptorAndThenMovesBytesToTheAdvertisedPort() throws Exception {
        int handshakePort = tent4jWithHandshake();
        LocalBuffer target = side.allocate(1 << 20, Permission.READ_WRITE);
        LocalBuffer local = side.allocate(4096, Permission.LOCAL_ONLY);

        String json;
        try (Socket s = dial(handshakePort)) {
            s.getOutputStream().write(frame(1, "{\"name\":\"10.0.0.9:15001\",\"protocol\":\"tcp\",\"tcp_data_port\":"
                    + "15002,\"tcp_proto_version\":2,\"buffers\":[]}\n"));
            byte[] reply = readFrame(s.getInputStream());
            assertEquals(1, reply[0], "a Metadata request is answered with a Metadata frame");
            json = new String(reply, 1, reply.length - 1, StandardCharsets.UTF_8);
            assertEquals(-1, s.getInputStream().read(), "the server shuts its side down after answering");
        }
        assertTrue(json.contains("\"name\":\"127.0.0.1:" + handshakePort + "\""), json);
        assertTrue(json.contains("\"protocol\":\"tcp\""), json);
        assertEquals(2, field(json, "tcp_proto_version"));
        assertEquals(target.address(), field(json, "addr"));
        assertEquals(1 << 20, field(json, "length"));
        assertFalse(json.contains("\"addr\":" + local.address()), "a LOCAL_ONLY buffer is not published: " + json);
        int dataPort = (int) field(json, "tcp_data_port");

        byte[] payload = new byte[4096];
        Arrays.fill(payload, (byte) 0x6d);
        assertArrayEquals(new String[]{MooncakePeerTest.GOLDEN_OK, MooncakePeerTest.GOLDEN_OK},
                FakeMooncakeTarget.writeThenReadBack(dataPort, target.address() + 64, payload));

        side.unregister(target);
        try (Socket s = dial(handshakePort)) {
            s.getOutputStream().write(frame(1, "{}"));
            byte[] reply = readFrame(s.getInputStream());
            assertTrue(new String(reply, StandardCharsets.UTF_8).contains("\"buffers\":[]"),
                    "an unregistered buffer leaves the descriptor");
        }
    }

    @Test
    void probeNotifyConnectionAndLegacyFramesAreAnsweredAsMooncakeDoes() throws Exception {
        int port = tent4jWithHandshake();
        String[][] cases = {
                {"3", "{}", "{\"status\":\"success\"}"},
                {"2", "{\"name\":\"x\",\"notify_msg\":\"hi\"}", "\"notify_msg\":\"\""},
                {"0", "{\"local_nic_path\":\"x@mlx5_0\",\"qp_num\":[1]}", "\"reply_msg\":\"tent4j"},
        };
        for (String[] c : cases) {
            try (Socket s = dial(port)) {
                s.getOutputStream().write(frame(Integer.parseInt(c[0]), c[1]));
                byte[] reply = readFrame(s.getInputStream());
                assertEquals(Integer.parseInt(c[0]), reply[0], "the answer has the request's type");
                String json = new String(reply, 1, reply.length - 1, StandardCharsets.UTF_8);
                assertTrue(json.contains(c[2]), () -> "type " + c[0] + ": " + json);
            }
        }
        try (Socket s = dial(port)) {
            s.getOutputStream().write(frame(-1, "{\"qp_num\":[1]}")); // a legacy peer: no type byte
            byte[] reply = readFrame(s.getInputStream());
            assertEquals('{', reply[0], "a legacy request gets an untyped answer");
        }
    }

    @Test
    void hostileHandshakeFramesAreDroppedWithoutAnAnswer() throws Exception {
        int port = tent4jWithHandshake();
        byte[][] hostile = {
                new byte[8],                                                                  // length 0
                ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong((1 << 20) + 1).array(), // over 1 MiB
                ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(-1).array(),    // 2^64 - 1
        };
        for (byte[] h : hostile) {
            try (Socket s = dial(port)) {
                s.getOutputStream().write(h);
                assertEquals(-1, s.getInputStream().read(), () -> "answered " + hex(h));
            }
        }
        try (Socket s = dial(port)) {
            s.getOutputStream().write(Arrays.copyOf(frame(1, "{\"name\":\"x\"}"), 12)); // truncated, then closed
            s.shutdownOutput();
            assertEquals(-1, s.getInputStream().read(), "a truncated frame is not answered");
        }
        try (Socket s = dial(port)) { // and the socket still serves
            s.getOutputStream().write(frame(3, "{}"));
            assertEquals(3, readFrame(s.getInputStream())[0]);
        }
    }

    // ----------------------------------------------------------------- tent4j reaches a Mooncake engine in P2P mode

    /** A Mooncake handshake socket that answers one request with {@code answer(request JSON)}, raw bytes. */
    private CompletableFuture<String> fakeHandshake(Function<String, byte[]> answer) throws IOException {
        fakeHandshake = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        CompletableFuture<String> request = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try (Socket s = fakeHandshake.accept()) {
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                byte[] body = readFrame(in);
                String json = new String(body, 1, body.length - 1, StandardCharsets.UTF_8);
                request.complete(body[0] + ":" + json);
                out.write(answer.apply(json));
                out.flush();
                s.shutdownOutput();
                new DataInputStream(in).read();
            } catch (IOException e) {
                request.completeExceptionally(e);
            }
        });
        return request;
    }

    @Test
    void tent4jFetchesAP2pMooncakeDescriptorAndMovesBytesToThatEngine() throws Exception {
        fake = new FakeMooncakeTarget(1 << 20);
        String mooncakeJson = fake.descriptorJson(2);
        CompletableFuture<String> request = fakeHandshake(json -> frame(1, mooncakeJson));
        side = new Tent4jSide(Map.of("lanes", "1"), Duration.ofSeconds(5));
        String name = "127.0.0.1:" + fakeHandshake.getLocalPort();
        byte[] own = ("{\"name\":\"tent4j\",\"protocol\":\"tcp\",\"tcp_data_port\":1,\"buffers\":[]}")
                .getBytes(StandardCharsets.UTF_8);

        MooncakeSegmentDescriptor d = MooncakeSegmentDescriptor.fetchP2p(name, own, Duration.ofSeconds(5));
        assertEquals("1:" + new String(own, StandardCharsets.UTF_8), request.get(5, TimeUnit.SECONDS),
                "a Metadata frame carrying the asking engine's descriptor");
        assertEquals(fake.port(), d.tcpDataPort());

        SegmentDescriptor peer = d.toSegmentDescriptor(MooncakeKeys.parseP2pName(name).host(), "mooncake-machine");
        PeerConnection c = side.transport.connect(peer);
        TestLocalMemory.Buffer local = side.allocate(8192, Permission.READ_WRITE);
        local.segment().asSlice(0, 4096).fill((byte) 0x42);
        TestSlice write = new TestSlice(Opcode.WRITE, local, 0, peer.buffers().getFirst(), FakeMooncakeTarget.BASE,
                4096, System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
        c.post(write);
        write.result().get(10, TimeUnit.SECONDS);
        TestSlice read = new TestSlice(Opcode.READ, local, 4096, peer.buffers().getFirst(), FakeMooncakeTarget.BASE,
                4096, System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
        c.post(read);
        read.result().get(10, TimeUnit.SECONDS);
        assertEquals(-1, local.segment().asSlice(0, 4096).mismatch(local.segment().asSlice(4096, 4096)));
        assertEquals(-1, MemorySegment.ofArray(fake.memory).asSlice(0, 4096).mismatch(local.segment().asSlice(0, 4096)));
    }

    @Test
    void aMalformedHandshakeAnswerFailsNamingThePeer() throws Exception {
        byte[] own = "{}".getBytes(StandardCharsets.UTF_8);
        Object[][] cases = {
                {frame(3, "{\"status\":\"success\"}"), ErrorCode.PROTOCOL, "a frame of type 3, not Metadata (1)"},
                {ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(2 << 20).array(), ErrorCode.PROTOCOL,
                        "announces 2097152 bytes, outside [1, 1048576]"},
                {frame(1, "not json"), ErrorCode.PROTOCOL, "(whole descriptor) not JSON"},
                {frame(1, "{\"name\":\"n\",\"protocol\":\"tcp\",\"tcp_data_port\":99999,\"buffers\":[]}"),
                        ErrorCode.PROTOCOL, "field tcp_data_port 99999 is outside [1, 65535]"},
                {Arrays.copyOf(frame(1, "{\"name\":\"n\"}"), 14), ErrorCode.PROTOCOL, "ends before its"},
        };
        for (Object[] c : cases) {
            fakeHandshake(json -> (byte[]) c[0]);
            String name = "127.0.0.1:" + fakeHandshake.getLocalPort();
            TransferException e = assertThrows(TransferException.class,
                    () -> MooncakeSegmentDescriptor.fetchP2p(name, own, Duration.ofSeconds(5)));
            assertEquals(c[1], e.code(), e.getMessage());
            assertTrue(e.getMessage().contains((String) c[2]) && e.getMessage().contains(name), e.getMessage());
            fakeHandshake.close();
        }
        int closedPort;
        try (ServerSocket gone = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = gone.getLocalPort();
        }
        TransferException unreachable = assertThrows(TransferException.class,
                () -> MooncakeSegmentDescriptor.fetchP2p("127.0.0.1:" + closedPort, own, Duration.ofSeconds(2)));
        assertEquals(ErrorCode.PEER_UNREACHABLE, unreachable.code(), unreachable.getMessage());
    }
}

package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.cli.Tent4jCommand;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.testkit.ChildJvm;

import picocli.CommandLine;

/**
 * {@code store master} with a token proves mounts without being asked (issue 29: "mounting a segment proves the caller
 * can write that engine's memory"): a member naming another engine's memory is refused and nothing is mounted, while
 * the same master with {@code --mount-proof=false} mounts it (so the default is what refuses). Masters as child JVMs.
 */
class MountProofDefaultTest {
    @TempDir
    Path dir;
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    @Test
    void theFlagDefaultsToWhetherTheMasterAuthenticates() {
        MasterCommand none = new MasterCommand();
        new CommandLine(none).parseArgs();
        assertTrue(none.mountProof(StoreSecurity.NONE.withToken(new byte[] {1})));
        assertFalse(none.mountProof(StoreSecurity.NONE));
        MasterCommand on = new MasterCommand();
        new CommandLine(on).parseArgs("--mount-proof");
        assertTrue(on.mountProof(StoreSecurity.NONE));
        MasterCommand off = new MasterCommand();
        new CommandLine(off).parseArgs("--mount-proof=false");
        assertFalse(off.mountProof(StoreSecurity.NONE.withToken(new byte[] {1})));
    }

    @Test
    void aMasterWithATokenRefusesAMountOfMemoryTheCallerDidNotWriteUnlessTurnedOff() throws Exception {
        Path token = dir.resolve("token");
        Files.writeString(token, "members-only\n");
        StoreSecurity member = StoreSecurity.NONE.withToken("members-only".getBytes(StandardCharsets.UTF_8));
        // another member's engine and memory: its bytes are whatever that member put there, never the nonce
        TransferEngine victim = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set("security.token_file", token.toString()).build());
        open.add(victim);
        RegisteredMemory mem = victim.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentSpec forged = new SegmentSpec("forged", victim.segmentName(), "127.0.0.1", mem.address(), 1 << 20);

        // both JVMs start at once: most of this test's time is their start
        ChildJvm provingJvm = master(token);
        ChildJvm trustingJvm = master(token, "--mount-proof=false");
        String[] proving = ports(provingJvm);
        try (MasterClient attacker = new MasterClient("127.0.0.1:" + proving[0], Duration.ofSeconds(30), member)) {
            String id = attacker.register();
            assertEquals(32, attacker.mountChallenge(id, forged).length, "a master with a token hands out nonces");
            StoreException e = assertThrows(StoreException.class, () -> attacker.mount(id, forged, 1L));
            assertEquals(StoreError.PERMISSION_DENIED, e.error(), e.getMessage());
            assertTrue(e.getMessage().contains("not the nonce") && e.getMessage().contains("forged"), e.getMessage());
        }
        assertEquals("[]", segments(proving[1]).strip(), "a refused mount mounts nothing");

        String[] trusting = ports(trustingJvm);
        try (MasterClient attacker = new MasterClient("127.0.0.1:" + trusting[0], Duration.ofSeconds(30), member)) {
            String id = attacker.register();
            assertEquals(0, attacker.mountChallenge(id, forged).length, "no proof asked");
            attacker.mount(id, forged, 1L);
        }
        assertTrue(segments(trusting[1]).contains("\"forged\""), segments(trusting[1]));
    }

    /** A master with {@code token} and {@code args}, starting. */
    private ChildJvm master(Path token, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("store", "master", "--port", "0", "--admin-port", "0",
                "--token-file", token.toString()));
        all.addAll(List.of(args));
        ChildJvm m = ChildJvm.start(Tent4jCommand.class, all.toArray(String[]::new));
        open.add(m::terminate);
        return m;
    }

    /** Its RPC and admin ports, once it listens. */
    private static String[] ports(ChildJvm m) throws Exception {
        String[] line = m.awaitLine("LISTENING ", ChildJvm.DEFAULT_TIMEOUT).split(" ");
        return new String[] {line[1], line[2]};
    }

    private static String segments(String adminPort) throws Exception {
        try (HttpClient http = HttpClient.newHttpClient()) {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPort + "/segments")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        }
    }
}

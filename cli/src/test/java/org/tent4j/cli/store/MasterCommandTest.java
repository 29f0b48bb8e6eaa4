package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.cli.Tent4jCommand;

import picocli.CommandLine;

/** {@code tent4j store master}'s durable-mode flags: a dir that is not this master's is refused before serving. */
class MasterCommandTest {
    @TempDir
    Path dir;

    private static int run(StringWriter err, String... args) {
        CommandLine cl = Tent4jCommand.commandLine();
        cl.setErr(new PrintWriter(err, true));
        return cl.execute(args);
    }

    @Test
    void aForeignDataDirIsRefusedNamingItsMarkerAndNothingIsServed() throws Exception {
        Files.writeString(dir.resolve("notes.txt"), "someone else's");
        StringWriter err = new StringWriter();
        assertEquals(2, run(err, "store", "master", "--host", "127.0.0.1", "--port", "0", "--admin-port", "-1",
                "--data_dir", dir.toString()), err::toString);
        assertTrue(err.toString().contains(dir.resolve("tent4j-store-master.properties").toString()), err::toString);
    }

    @Test
    void theMasterBindsLoopbackUnlessToldOtherwise() {
        MasterCommand master = new MasterCommand();
        new CommandLine(master).parseArgs();
        assertEquals("127.0.0.1", master.host);
    }

    @Test
    void theInboundBytesBudgetIsASizeOfAtLeastOneByte() {
        MasterCommand defaults = new MasterCommand();
        new CommandLine(defaults).parseArgs();
        assertEquals(256L << 20, defaults.inboundBytesBudget);
        MasterCommand set = new MasterCommand();
        new CommandLine(set).parseArgs("--inbound-bytes-budget", "64m");
        assertEquals(64L << 20, set.inboundBytesBudget);
        StringWriter err = new StringWriter();
        assertEquals(2, run(err, "store", "master", "--port", "0", "--admin-port", "-1", "--inbound-bytes-budget", "0"),
                err::toString);
        assertTrue(err.toString().contains("--inbound-bytes-budget must be at least 1 byte: 0"), err::toString);
    }

    @Test
    void peersWithoutADataDirAndAPeerNamedTwiceAreRefused() {
        StringWriter err = new StringWriter();
        assertEquals(2, run(err, "store", "master", "--port", "0", "--admin-port", "-1",
                "--peers", "m1=127.0.0.1:1"), err::toString);
        assertTrue(err.toString().contains("--peers needs --data-dir"), err::toString);
        StringWriter twice = new StringWriter();
        assertEquals(2, run(twice, "store", "master", "--port", "0", "--admin-port", "-1", "--data-dir",
                dir.resolve("m").toString(), "--peers", "m1=127.0.0.1:1,m1=127.0.0.1:2"), twice::toString);
        assertTrue(twice.toString().contains("names m1"), twice::toString);
    }

    @Test
    void writeThroughAndThePromotionWindowReachTheMastersConfig() {
        MasterCommand plain = new MasterCommand();
        new CommandLine(plain).parseArgs();
        assertEquals(false, plain.config().writeThrough());
        assertEquals(java.time.Duration.ZERO, plain.config().promoteWindow(), "no window: today's counting");
        MasterCommand set = new MasterCommand();
        new CommandLine(set).parseArgs("--write-through", "--promote-after-hits", "2", "--promote-window", "30s");
        assertEquals(true, set.config().writeThrough());
        assertEquals(java.time.Duration.ofSeconds(30), set.config().promoteWindow());
        assertEquals(2, set.config().promoteAfterHits());
        StringWriter err = new StringWriter();
        assertEquals(2, run(err, "store", "master", "--port", "0", "--admin-port", "-1", "--promote-window", "1441m"),
                err::toString);
        assertTrue(err.toString().contains("--promote-window") && err.toString().contains("PT24H1M"), err::toString);
    }
}

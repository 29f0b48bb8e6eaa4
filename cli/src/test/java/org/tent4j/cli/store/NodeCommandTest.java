package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.cli.Tent4jCommand;

import picocli.CommandLine;

/** {@code tent4j store node --disk-dir} and {@code store master --offload-on-evict}: bad input is refused by name. */
class NodeCommandTest {
    @TempDir
    Path dir;

    @Test
    void aDiskDirThatIsNotADirectoryOrASizeUnderABlockIsRefusedByNameBeforeAnythingStarts() throws Exception {
        Path notADir = Files.writeString(dir.resolve("plain"), "x");
        // the master named is never asked: nothing listens there
        String[][] bad = {{"--disk-dir", notADir.toString(), "--disk-size", "1m"}, {"--disk-dir", dir.toString(), "--disk-size", "0"},
                {"--disk-dir", dir.toString(), "--scrub-interval", "-1s"}};
        String[] why = {"disk dir " + notADir + " is not a directory", "disk segment in " + dir + ": size must be at least 4096",
                "a duration cannot be negative: '-1s'"};
        for (int i = 0; i < bad.length; i++) {
            StringWriter err = new StringWriter();
            CommandLine cl = Tent4jCommand.commandLine();
            cl.setErr(new PrintWriter(err, true));
            String[] args = new String[6 + bad[i].length];
            System.arraycopy(new String[]{"store", "node", "--master", "127.0.0.1:1", "--segment-size", "1m"}, 0, args, 0, 6);
            System.arraycopy(bad[i], 0, args, 6, bad[i].length);
            assertEquals(2, cl.execute(args), err::toString);
            assertTrue(err.toString().contains(why[i]), err::toString);
        }
        try (var files = Files.list(dir)) {
            assertEquals(1, files.count(), "no file created");
        }
    }

    @Test
    void offloadOnEvictAndItsTimeoutAreMasterSettings() {
        MasterCommand on = new MasterCommand();
        new CommandLine(on).parseArgs();
        assertTrue(on.config().offloadOnEvict());
        MasterCommand off = new MasterCommand();
        new CommandLine(off).parseArgs("--offload-on-evict", "false", "--offload-timeout", "5s", "--promote-after-hits", "3");
        assertFalse(off.config().offloadOnEvict());
        assertEquals(3, off.config().promoteAfterHits());
        assertEquals(0, on.config().promoteAfterHits(), "promotion is off by default");
        assertEquals(Duration.ofSeconds(5), off.config().offloadTimeout());
    }
}

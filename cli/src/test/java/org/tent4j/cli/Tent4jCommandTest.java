package org.tent4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

class Tent4jCommandTest {

    static String[] run(int expectedStatus, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Tent4jCommand.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        assertEquals(expectedStatus, cl.execute(args), () -> "out:\n" + out + "\nerr:\n" + err);
        return new String[]{out.toString(), err.toString()};
    }

    @Test
    void listsEveryProductCommand() {
        String out = run(0, "--help")[0];
        for (String command : new String[]{"doctor", "bench", "file-bench", "nixl-bench", "metadata-server", "store"}) {
            assertTrue(out.contains(command), command + " missing from:\n" + out);
        }
        String store = run(0, "store", "--help")[0];
        for (String command : new String[]{"master", "node", "scrub", "bench", "failover-bench"}) {
            assertTrue(store.contains(command), command + " missing from:\n" + store);
        }
    }

    /** A run builds the model of the subcommand it names alone (or of its alias); anything else gets the whole tree. */
    @Test
    void aRunBuildsOnlyTheSubcommandItNames() {
        for (String name : new String[]{"bench", "te-bench"}) {
            CommandLine cl = Tent4jCommand.commandLine(new String[]{name, "--mode=initiator"});
            assertEquals(List.of("bench"), cl.getSubcommands().values().stream().map(CommandLine::getCommandName)
                    .distinct().toList(), name);
            StringWriter err = new StringWriter();
            cl.setErr(new PrintWriter(err, true));
            assertEquals(2, cl.execute(name, "--mode=initiator"));
            assertTrue(err.toString().contains("--segment_id is required"), err.toString());
        }
        for (String version : new String[]{"--version", "-V"}) {
            CommandLine cl = Tent4jCommand.commandLine(new String[]{version});
            assertTrue(cl.getSubcommands().isEmpty(), version);
            StringWriter out = new StringWriter();
            cl.setOut(new PrintWriter(out, true));
            assertEquals(0, cl.execute(version));
            assertTrue(out.toString().startsWith("tent4j "), out.toString());
        }
        int whole = Tent4jCommand.commandLine().getSubcommands().size();
        for (String[] args : new String[][]{{}, {"--help"}, {"help", "bench"}, {"no-such-command"}}) {
            assertEquals(whole, Tent4jCommand.commandLine(args).getSubcommands().size(), String.join(" ", args));
        }
    }

    @Test
    void doctorIsASubcommandAndNamesTheBuild() {
        String out = run(0, "doctor", "--no-options")[0];
        assertTrue(out.contains("transports ("), out);
        assertTrue(out.contains("\nbuild: " + BuildInfo.current() + "\n"), out);
    }

    @Test
    void versionNamesTheCommitItWasBuiltFrom() {
        String out = run(0, "--version")[0];
        // the build runs in a git checkout, so the commit is known: seven or more hex digits
        assertTrue(out.matches("(?s)tent4j \\d+\\.\\d+\\.\\d+\\S* \\(commit [0-9a-f]{7,}(-dirty)?\\).*"), out);
    }

    @Test
    void benchFlagsWorkThroughTheSubcommandAndItsOldName() {
        String err = run(2, "bench", "--mode=initiator")[1];
        assertTrue(err.contains("--segment_id is required"), err);
        err = run(2, "te-bench", "--mode=initiator")[1];
        assertTrue(err.contains("--segment_id is required"), err);
    }

    @Test
    void everyCommandSpellsItsOptionsInKebabCaseAndAcceptsTheSnakeCaseAlias() {
        CommandLine root = Tent4jCommand.commandLine();
        StringBuilder wrong = new StringBuilder();
        check(root, wrong);
        assertEquals("", wrong.toString());
    }

    private static void check(CommandLine cl, StringBuilder wrong) {
        for (CommandLine.Model.OptionSpec o : cl.getCommandSpec().options()) {
            String longest = o.longestName();
            if (longest.startsWith("--") && longest.contains("_")) {
                wrong.append(cl.getCommandSpec().qualifiedName()).append(' ').append(longest)
                        .append(": the first long name must be --kebab-case\n");
            }
            for (String name : o.names()) {
                if (name.startsWith("--") && name.substring(2).contains("-")
                        && !java.util.Arrays.asList(o.names()).contains(name.replace('-', '_').replaceFirst("^__", "--"))) {
                    wrong.append(cl.getCommandSpec().qualifiedName()).append(' ').append(name)
                            .append(": no --snake_case alias\n");
                }
            }
        }
        for (CommandLine sub : cl.getSubcommands().values()) {
            if (sub.getParent() == cl) {
                check(sub, wrong);
            }
        }
    }

    @Test
    void storeCommandsReportBadOptionsAsUsageErrors() {
        String err = run(2, "store", "master", "--tick", "soon")[1];
        assertTrue(err.contains("'soon'"), err);
        err = run(2, "store", "node", "--segment-size", "lots")[1];
        assertTrue(err.contains("'lots'"), err);
        err = run(2, "store", "bench", "--bogus")[1];
        assertTrue(err.contains("--bogus"), err);
        err = run(2, "store", "master", "--port", "0", "--admin-port", "-1", "--placement", "nearest")[1];
        assertTrue(err.contains("--placement must be random or free_ratio_first: nearest"), err);
        // refused before any master starts
        err = run(2, "store", "failover-bench", "--kills", "0")[1];
        assertTrue(err.contains("--kills must be at least 1"), err);
    }
}

package org.tent4j.samples.cli;

import java.util.concurrent.Callable;

import org.tent4j.samples.bench.FileBench;
import org.tent4j.samples.bench.TeBench;
import org.tent4j.samples.doctor.Doctor;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code tent4j}: the command behind {@code bin/tent4j}. */
@Command(name = "tent4j", mixinStandardHelpOptions = true,
        versionProvider = Tent4jCommand.Version.class,
        description = "tent4j command line tools.",
        subcommands = {Doctor.class, MetadataServerCommand.class, TeBench.class, FileBench.class, CommandLine.HelpCommand.class})
public final class Tent4jCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        CommandLine cl = commandLine();
        ((TeBench) cl.getSubcommands().get("te-bench").getCommand()).handlingTerminationSignals();
        int status = cl.execute(args);
        if (status == 0 && MetadataServerCommand.serverRunning()) {
            // the server's main may return after starting its threads; System.exit would stop it
            return;
        }
        System.exit(status);
    }

    public static CommandLine commandLine() {
        return new CommandLine(new Tent4jCommand()).setCaseInsensitiveEnumValuesAllowed(true)
                .setParameterExceptionHandler(new ConciseUsageErrors());
    }

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return 2;
    }

    /** The version of the samples jar, from its manifest when packaged. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Tent4jCommand.class.getPackage().getImplementationVersion();
            return new String[]{"tent4j " + (v == null ? "(development build)" : v)};
        }
    }
}

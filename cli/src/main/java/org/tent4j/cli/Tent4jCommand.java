package org.tent4j.cli;

import java.util.concurrent.Callable;

import org.tent4j.cli.bench.FileBench;
import org.tent4j.cli.config.ConfigTemplateCommand;
import org.tent4j.cli.bench.NixlBench;
import org.tent4j.cli.bench.TeBench;
import org.tent4j.cli.doctor.Doctor;
import org.tent4j.cli.options.ConciseUsageErrors;
import org.tent4j.cli.store.StoreCommand;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code tent4j}: every product command behind one entry point ({@code bin/tent4j}; the other {@code bin/} scripts
 * are aliases of its subcommands). Options are spelled {@code --kebab-case}; the {@code --snake_case} form Mooncake's
 * tools use is accepted as an alias.
 */
@Command(name = "tent4j", mixinStandardHelpOptions = true,
        versionProvider = Tent4jCommand.Version.class,
        description = "tent4j command line tools.",
        subcommands = {Doctor.class, TeBench.class, FileBench.class, NixlBench.class, MetadataServerCommand.class, ConfigTemplateCommand.class, AotTrainCommand.class,
                StoreCommand.class, CommandLine.HelpCommand.class})
public final class Tent4jCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        CommandLine cl = commandLine();
        ((TeBench) cl.getSubcommands().get("bench").getCommand()).handlingTerminationSignals();
        System.exit(cl.execute(args));
    }

    /** The whole command tree, parsing enums case-insensitively, with one-line usage errors everywhere. */
    public static CommandLine commandLine() {
        return new CommandLine(new Tent4jCommand()).setCaseInsensitiveEnumValuesAllowed(true)
                .setParameterExceptionHandler(new ConciseUsageErrors());
    }

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return 2;
    }

    /** The version and commit the command line was built from. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[]{BuildInfo.current().toString()};
        }
    }
}

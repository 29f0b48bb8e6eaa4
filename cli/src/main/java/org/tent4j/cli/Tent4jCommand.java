package org.tent4j.cli;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;

import org.slf4j.bridge.SLF4JBridgeHandler;
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
        description = "tent4j command line tools.")
public final class Tent4jCommand implements Callable<Integer> {
    private static final List<Class<?>> SUBCOMMANDS = List.of(Doctor.class, TeBench.class, FileBench.class,
            NixlBench.class, MetadataServerCommand.class, ConfigTemplateCommand.class, AotTrainCommand.class,
            StoreCommand.class, CommandLine.HelpCommand.class);

    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        routeJavaUtilLogging();
        CommandLine cl = commandLine(args);
        if (cl.getSubcommands().get("bench") instanceof CommandLine bench) {
            ((TeBench) bench.getCommand()).handlingTerminationSignals();
        }
        System.exit(cl.execute(args));
    }

    /**
     * Hands java.util.logging's records to SLF4J, as the only handler: gRPC (the store's RPC, jetcd) logs through it, and
     * its records then obey logback.xml (its level for {@code io.grpc}, its one-line pattern, which escapes the line
     * breaks a peer's text may carry) instead of JUL's own two-line console output. It initializes JUL at
     * start, about a millisecond with the AOT cache; the store's commands did anyway.
     */
    static void routeJavaUtilLogging() {
        SLF4JBridgeHandler.removeHandlersForRootLogger();
        SLF4JBridgeHandler.install();
    }

    /** The whole command tree, parsing enums case-insensitively, with one-line usage errors everywhere. */
    public static CommandLine commandLine() {
        return commandLine(SUBCOMMANDS);
    }

    /**
     * The tree {@code args} run in: the root and only the subcommand they name, the root alone for the version, or
     * the whole tree otherwise (help, a typo). picocli builds every command's model from its annotations by
     * reflection, code that runs once per start and so in the interpreter: the whole tree took 0.1-0.3 s longer to
     * build than the one command that runs ({@code tent4j --help} against {@code tent4j doctor --help}).
     */
    static CommandLine commandLine(String[] args) {
        if (args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"))) {
            // the version needs no subcommand
            return commandLine(List.of());
        }
        if (args.length > 0) {
            for (Class<?> c : SUBCOMMANDS) {
                Command command = c.getAnnotation(Command.class);
                if (c != CommandLine.HelpCommand.class
                        && (command.name().equals(args[0]) || Arrays.asList(command.aliases()).contains(args[0]))) {
                    return commandLine(List.of(c));
                }
            }
        }
        return commandLine();
    }

    private static CommandLine commandLine(List<Class<?>> subcommands) {
        CommandLine root = new CommandLine(new Tent4jCommand());
        for (Class<?> c : subcommands) {
            root.addSubcommand(c);
        }
        // set after the subcommands are added: picocli hands these settings down to the subcommands present now
        return root.setCaseInsensitiveEnumValuesAllowed(true).setParameterExceptionHandler(new ConciseUsageErrors());
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

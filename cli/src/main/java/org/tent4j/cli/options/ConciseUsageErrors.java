package org.tent4j.cli.options;

import java.io.PrintWriter;

import picocli.CommandLine;

/**
 * Prints a bad command line's error and a pointer to {@code --help}, instead of picocli's default of the error followed
 * by the whole usage text, in which the one line that matters is easy to miss.
 */
public final class ConciseUsageErrors implements CommandLine.IParameterExceptionHandler {
    @Override
    public int handleParseException(CommandLine.ParameterException ex, String[] args) {
        CommandLine cmd = ex.getCommandLine();
        PrintWriter err = cmd.getErr();
        err.println(cmd.getCommandName() + ": " + ex.getMessage());
        CommandLine.UnmatchedArgumentException.printSuggestions(ex, err);
        err.println("Run '" + cmd.getCommandSpec().qualifiedName() + " --help' for the flags.");
        err.flush();
        return cmd.getCommandSpec().exitCodeOnInvalidInput();
    }
}

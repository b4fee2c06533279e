// QuartzOracle evaluates cron expressions with the real org.quartz.CronExpression
// (Quartz 2.3.2, Debian's libquartz2-java) and prints golden lines for the Go
// tests in core/cron. It is test tooling only; see regen.sh.
//
// Input (stdin), one case per line, tab separated; blank lines and lines
// starting with '#' are ignored:
//
//	EXPR <TAB> ZONE <TAB> FROM <TAB> N
//
// EXPR is escaped: "\t" for a tab, "\n" for a newline, "\\" for a backslash,
// and "\#" for a leading '#' (which would otherwise start a comment).
// ZONE is passed to java.util.TimeZone.getTimeZone. FROM is an ISO-8601
// instant with offset (e.g. 2025-03-09T01:00:00-05:00). N is how many
// successive getTimeAfter results to compute.
//
// Output: the four input columns followed by one result column:
//
//	fires ZONEID T1 T2 ... [end]   fire times as yyyy-MM-dd'T'HH:mm:ssXXX in the
//	                               zone; "end" when getTimeAfter returned null
//	parse-error MESSAGE            new CronExpression threw ParseException
//	runtime-error EXCEPTION        getTimeAfter threw
//
// A fires list ends in "hang" when getTimeAfter did not return within
// HANG_SECONDS (Quartz loops forever on a few odd expressions).
//
// The first output line is "# maxYear=<CronExpression.MAX_YEAR>".
// With the single argument "zones", it instead prints every ID of
// TimeZone.getAvailableIDs(); with "zone", it reads zone strings from stdin and
// prints "<input> <TAB> <resolved ID> <TAB> <raw offset ms>".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.text.ParseException;
import java.text.SimpleDateFormat;
import java.time.OffsetDateTime;
import java.util.Date;
import java.util.TimeZone;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

public final class QuartzOracle {
    static final long HANG_SECONDS = 3;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        if (args.length == 1 && args[0].equals("zones")) {
            for (String id : TimeZone.getAvailableIDs()) {
                out.println(id);
            }
            out.flush();
            return;
        }
        if (args.length == 1 && args[0].equals("zone")) {
            String line;
            while ((line = in.readLine()) != null) {
                TimeZone tz = TimeZone.getTimeZone(line);
                out.println(line + "\t" + tz.getID() + "\t" + tz.getRawOffset());
            }
            out.flush();
            return;
        }
        out.println("# maxYear=" + org.quartz.CronExpression.MAX_YEAR);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] col = line.split("\t", -1);
            if (col.length < 4) {
                throw new IllegalArgumentException("bad input line: " + line);
            }
            out.println(col[0] + "\t" + col[1] + "\t" + col[2] + "\t" + col[3] + "\t"
                    + eval(unescape(col[0]), col[1], col[2], Integer.parseInt(col[3])));
        }
        out.flush();
    }

    static String eval(String expr, String zone, String from, int n) {
        final org.quartz.CronExpression ce;
        try {
            ce = new org.quartz.CronExpression(expr);
        } catch (ParseException e) {
            return "parse-error " + clean(e.getMessage());
        }
        TimeZone tz = TimeZone.getTimeZone(zone);
        ce.setTimeZone(tz);
        SimpleDateFormat f = new SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ssXXX");
        f.setTimeZone(tz);
        StringBuilder sb = new StringBuilder("fires ").append(tz.getID());
        Date d = Date.from(OffsetDateTime.parse(from).toInstant());
        for (int i = 0; i < n; i++) {
            final Date after = d;
            FutureTask<Date> task = new FutureTask<>(() -> ce.getTimeAfter(after));
            Thread th = new Thread(task);
            th.setDaemon(true);
            th.start();
            try {
                d = task.get(HANG_SECONDS, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                // Quartz never returns for a few odd expressions; record it,
                // and stop the spinning thread so it does not starve the rest.
                stopThread(th);
                sb.append(" hang");
                break;
            } catch (ExecutionException e) {
                return "runtime-error " + clean(e.getCause().toString());
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            if (d == null) {
                sb.append(" end");
                break;
            }
            sb.append(' ').append(f.format(d));
        }
        return sb.toString();
    }

    @SuppressWarnings({"deprecation", "removal"})
    static void stopThread(Thread th) {
        th.stop(); // still works on Java 17; a spinning getTimeAfter never checks interrupts
    }

    static String clean(String s) {
        return s == null ? "null" : s.replace('\t', ' ').replace('\n', ' ');
    }

    static String unescape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 1 < s.length()) {
                char d = s.charAt(++i);
                switch (d) {
                    case 't': b.append('\t'); break;
                    case 'n': b.append('\n'); break;
                    case '\\': b.append('\\'); break;
                    case '#': b.append('#'); break;
                    default: b.append('\\').append(d);
                }
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}

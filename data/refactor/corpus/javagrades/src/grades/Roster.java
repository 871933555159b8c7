package grades;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Students and their marks. */
public class Roster {
    private final Map<String, List<Integer>> marks = new TreeMap<>();

    public void add(String student, int mark) {
        if (student.equals("")) {
            throw new IllegalArgumentException("no name");
        }
        marks.computeIfAbsent(student, k -> new ArrayList<>()).add(mark);
    }

    public boolean isEmpty() {
        return marks.size() == 0;
    }

    public List<Integer> of(String student) {
        List<Integer> found = marks.get(student);
        if (found == null || found.size() == 0) {
            return new ArrayList<>();
        }
        return found;
    }

    public double average(String student) {
        List<Integer> found = of(student);
        if (found.size() == 0) {
            return 0.0;
        }
        int sum = 0;
        for (int m : found) {
            sum += m;
        }
        return (double) sum / found.size();
    }

    public List<String> students() {
        return new ArrayList<>(marks.keySet());
    }
}

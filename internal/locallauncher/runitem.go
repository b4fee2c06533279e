package locallauncher

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// RunItem is the wrapper of one item (the plugin binary run with
// RunItemArg and the item's directory): it fetches the app into the item's
// work directory (or the app's cache), runs the bootstrap script with sh
// and the item's environment, and records the exit status in the item's
// exit file ("code reason"). It returns the process exit code.
func RunItem(ctx context.Context, dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "spec.json"))
	if err != nil {
		return 2
	}
	var spec itemSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return 2
	}
	record := func(code int, reason string) int {
		_ = os.WriteFile(filepath.Join(dir, "exit.tmp"), []byte(strconv.Itoa(code)+" "+reason), 0o644)
		_ = os.Rename(filepath.Join(dir, "exit.tmp"), filepath.Join(dir, "exit"))
		return code
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return record(127, "work directory: "+err.Error())
	}
	if spec.AppURL != "" {
		if err := fetch(ctx, spec, work); err != nil {
			return record(127, "fetch "+spec.AppURL+": "+err.Error())
		}
	}
	out, _ := os.Create(filepath.Join(dir, "output"))
	defer out.Close()
	cmd := exec.CommandContext(ctx, "sh", "-c", spec.Script)
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = out, out
	env := os.Environ()
	for k, v := range spec.Env {
		env = append(env, k+"="+strings.ReplaceAll(v, spi.LaunchNodePlaceholder, localNode))
	}
	if spec.Daemon {
		env = append(env, "EJOB_FIRE_LOG="+filepath.Join(dir, fireLog))
	}
	cmd.Env = env
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return record(0, "")
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return record(128+int(ws.Signal()), "killed by signal "+ws.Signal().String())
		}
		return record(ee.ExitCode(), "exit status "+strconv.Itoa(ee.ExitCode()))
	}
	return record(127, err.Error())
}

// fetch puts the app into work: from the app's cache directory when
// caching is on and it holds the app, else downloaded (a .tar.gz/.tgz is
// unpacked, another file kept under its name and made executable).
func fetch(ctx context.Context, spec itemSpec, work string) error {
	src := filepath.Join(spec.CacheDir, "content")
	if !spec.Cache {
		src = filepath.Join(work, ".fetch")
	}
	if _, err := os.Stat(src); err != nil || !spec.Cache {
		if err := download(ctx, spec.AppURL, src); err != nil {
			return err
		}
	}
	name := path.Base(strings.SplitN(spec.AppURL, "?", 2)[0])
	if strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz") {
		return untar(src, work)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(work, name), b, 0o755)
}

func download(ctx context.Context, url, dst string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d", dst, os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func untar(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dst, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777|0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, tr); err != nil {
				w.Close()
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
		}
	}
}

# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
# An Ansible connection into a running container by its init's process id,
# through nsenter(1): the end-to-end test's containers run under
# `systemd-nspawn --register=no`, so machined's connection cannot find them,
# and their root (an overlay) is visible only inside their mount namespace,
# so the chroot connection cannot reach it either.
#
# Modelled on community.general's chroot connection. Set ansible_host to the
# process id of the container's PID 1 as the host sees it.

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = '''
    name: nsenter
    short_description: Run tasks in the namespaces of a running process
    description:
        - Runs commands with nsenter in the mount, UTS, IPC, network and PID
          namespaces of a process, typically a container's init.
    author: vipd maintainers
    options:
      remote_addr:
        description: Process id (as seen on the controller) whose namespaces to enter.
        default: inventory_hostname
        vars:
          - name: inventory_hostname
          - name: ansible_host
      executable:
        description: Shell that runs the commands inside.
        default: /bin/sh
        vars:
          - name: ansible_executable
'''

import os
import subprocess

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_bytes
from ansible.module_utils.six.moves import shlex_quote
from ansible.plugins.connection import ConnectionBase, BUFSIZE
from ansible.utils.display import Display

display = Display()


class Connection(ConnectionBase):
    """Local connection into another process's namespaces."""

    transport = 'nsenter'
    has_pipelining = True
    become_methods = frozenset()
    default_user = 'root'

    def __init__(self, play_context, new_stdin, *args, **kwargs):
        super(Connection, self).__init__(play_context, new_stdin, *args, **kwargs)
        if os.geteuid() != 0:
            raise AnsibleError("the nsenter connection needs root")

    def _pid(self):
        pid = str(self.get_option('remote_addr'))
        if not pid.isdigit() or not os.path.isdir('/proc/' + pid):
            raise AnsibleError("nsenter: no process %s" % pid)
        return pid

    def _connect(self):
        super(Connection, self)._connect()
        if not self._connected:
            self._pid()
            self._connected = True
        return self

    def _popen(self, cmd, stdin=subprocess.PIPE):
        local_cmd = ['nsenter', '--target', self._pid(), '--mount', '--uts', '--ipc',
                     '--net', '--pid', '--root', '--wd',
                     self.get_option('executable'), '-c', cmd]
        display.vvv("EXEC %s" % local_cmd, host=self._play_context.remote_addr)
        local_cmd = [to_bytes(i, errors='surrogate_or_strict') for i in local_cmd]
        return subprocess.Popen(local_cmd, shell=False, stdin=stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def exec_command(self, cmd, in_data=None, sudoable=False):
        super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        p = self._popen(cmd)
        stdout, stderr = p.communicate(in_data)
        return p.returncode, stdout, stderr

    @staticmethod
    def _absolute(path):
        if not path.startswith(os.path.sep):
            path = os.path.join(os.path.sep, path)
        return os.path.normpath(path)

    def put_file(self, in_path, out_path):
        super(Connection, self).put_file(in_path, out_path)
        out_path = shlex_quote(self._absolute(out_path))
        try:
            with open(to_bytes(in_path, errors='surrogate_or_strict'), 'rb') as in_file:
                p = self._popen('cat > %s' % out_path, stdin=in_file)
                stdout, stderr = p.communicate()
        except IOError:
            raise AnsibleError("file or module does not exist at: %s" % in_path)
        if p.returncode != 0:
            raise AnsibleError("failed to transfer %s to %s:\n%s\n%s" % (in_path, out_path, stdout, stderr))

    def fetch_file(self, in_path, out_path):
        super(Connection, self).fetch_file(in_path, out_path)
        in_path = shlex_quote(self._absolute(in_path))
        p = self._popen('cat %s' % in_path)
        with open(to_bytes(out_path, errors='surrogate_or_strict'), 'wb+') as out_file:
            chunk = p.stdout.read(BUFSIZE)
            while chunk:
                out_file.write(chunk)
                chunk = p.stdout.read(BUFSIZE)
            stdout, stderr = p.communicate()
        if p.returncode != 0:
            raise AnsibleError("failed to fetch %s to %s:\n%s" % (in_path, out_path, stderr))

    def close(self):
        super(Connection, self).close()
        self._connected = False

// `terrace completion bash|zsh`: completion scripts generated from the command table, so they
// never fall behind the commands.
import type { Command } from './command.js';
import { usageError } from './errors.js';

interface Tree { top: string[]; groups: Record<string, string[]>; options: Record<string, string[]>; choices: Record<string, string[]> }

async function tree(): Promise<Tree> {
  const { allCommands, GLOBAL_OPTIONS } = await import('./main.js');
  const commands: Command[] = allCommands();
  const top = new Set<string>(['help']);
  const groups: Record<string, string[]> = {};
  const options: Record<string, string[]> = {};
  const choices: Record<string, string[]> = {};
  for (const c of commands) {
    const [a, b] = c.name.split(' ') as [string, string | undefined];
    top.add(a);
    if (b) (groups[a] ??= []).push(b);
    const opts = { ...c.options, ...GLOBAL_OPTIONS };
    options[c.name] = Object.keys(opts).map((k) => `--${k}`);
    for (const [k, o] of Object.entries(opts)) if (o.choices) choices[`--${k}`] = o.choices;
  }
  return { top: [...top], groups, options, choices };
}

function bash(t: Tree): string {
  const groupCases = Object.entries(t.groups).map(([g, subs]) => `    ${g}) if [[ $COMP_CWORD -eq 2 ]]; then COMPREPLY=($(compgen -W "${subs.join(' ')}" -- "$cur")); return; fi; key="${g} \${COMP_WORDS[2]}" ;;`);
  const optCases = Object.entries(t.options).map(([k, o]) => `    "${k}") opts="${o.join(' ')}" ;;`);
  const choiceCases = Object.entries(t.choices).map(([k, c]) => `    ${k}) COMPREPLY=($(compgen -W "${c.join(' ')}" -- "$cur")); return ;;`);
  return `# bash completion for terrace; load with: source <(terrace completion bash)
_terrace() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "${t.top.join(' ')}" -- "$cur")); return
  fi
  local key="\${COMP_WORDS[1]}" opts=""
  case "\${COMP_WORDS[1]}" in
${groupCases.join('\n')}
  esac
  case "$prev" in
${choiceCases.join('\n')}
  esac
  case "$key" in
${optCases.join('\n')}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  fi
}
complete -o default -F _terrace terrace
`;
}

function zsh(t: Tree): string {
  const groupCases = Object.entries(t.groups).map(([g, subs]) => `    ${g}) if (( CURRENT == 3 )); then compadd -- ${subs.join(' ')}; return; fi; key="${g} \${words[3]}" ;;`);
  const optCases = Object.entries(t.options).map(([k, o]) => `    "${k}") opts=(${o.join(' ')}) ;;`);
  const choiceCases = Object.entries(t.choices).map(([k, c]) => `    ${k}) compadd -- ${c.join(' ')}; return ;;`);
  return `#compdef terrace
# zsh completion for terrace; load with: source <(terrace completion zsh)
# (or save it as _terrace in a directory on $fpath)
_terrace() {
  if (( CURRENT == 2 )); then
    compadd -- ${t.top.join(' ')}; return
  fi
  local key="\${words[2]}"
  local -a opts
  case "\${words[2]}" in
${groupCases.join('\n')}
  esac
  case "\${words[CURRENT-1]}" in
${choiceCases.join('\n')}
  esac
  case "$key" in
${optCases.join('\n')}
  esac
  if [[ "$PREFIX" == -* ]]; then
    compadd -- $opts
  else
    _files
  fi
}
if [[ "\${funcstack[1]}" == _terrace ]]; then _terrace "$@"; else compdef _terrace terrace; fi
`;
}

export const completionCommand: Command = {
  name: 'completion',
  summary: 'Print a shell completion script (bash or zsh)',
  args: '<bash|zsh>',
  minArgs: 1,
  maxArgs: 1,
  details: `  bash:  echo 'source <(terrace completion bash)' >> ~/.bashrc
  zsh:   echo 'source <(terrace completion zsh)' >> ~/.zshrc   (after compinit)`,
  async run(ctx, p) {
    const shell = p.positionals[0];
    if (shell !== 'bash' && shell !== 'zsh') throw usageError(`no completion for "${shell}"`, 'use bash or zsh');
    const t = await tree();
    ctx.stdout.write(shell === 'bash' ? bash(t) : zsh(t));
  },
};

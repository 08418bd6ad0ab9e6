// The flame graph's script (report_svg.cpp write_svg): it lays the boxes out again on load and
// at each zoom (click a box to zoom to it, "Reset zoom" to go back), shows a box's details on
// hover, and highlights the frames whose label matches a regular expression ("Search").
// report_svg.cpp fills in @ROW@ (a row's height in pixels) and @BOTTOM@ (the y of the lowest
// row's bottom edge). Embedded in every SVG as it is below these lines (the comment lines at
// the top left out, see embed_asset.py): what it writes is what a viewer runs.
(function(){
var W=1200,P=10,R=@ROW@,B=@BOTTOM@,zx=0,zw=1,zd=0,E=1e-9;
var gs=[].slice.call(document.querySelectorAll('g.f'));
var det=document.getElementById('details'),rst=document.getElementById('reset');
function num(g,k){return +g.getAttribute('data-'+k);}
function fit(s,w){var n=Math.floor((w-6)/6.5);return n<3?'':s.length<=n?s:s.slice(0,n-2)+'..';}
function layout(){gs.forEach(function(g){
 var x=num(g,'x'),w=num(g,'w'),d=num(g,'d'),r=g.querySelector('rect'),t=g.querySelector('text');
 var inside=d>=zd&&x>=zx-E&&x+w<=zx+zw+E,anc=d<zd&&x<=zx+E&&x+w>=zx+zw-E;
 var px=anc?P:P+(x-zx)/zw*(W-2*P),pw=anc?W-2*P:w/zw*(W-2*P);
 if(!(inside||anc)||pw<0.3){g.setAttribute('display','none');return;}
 g.removeAttribute('display');var py=B-(d+1)*R;
 r.setAttribute('x',px);r.setAttribute('y',py);r.setAttribute('width',pw);r.setAttribute('height',R-1);r.setAttribute('opacity',anc?0.5:1);
 t.setAttribute('x',px+3);t.setAttribute('y',py+R-4);t.textContent=fit(g.getAttribute('data-l'),pw);});
 rst.setAttribute('display',zw<1||zd>0?'inline':'none');}
gs.forEach(function(g){
 g.addEventListener('click',function(){zx=num(g,'x');zw=num(g,'w')||1;zd=num(g,'d');layout();});
 g.addEventListener('mouseover',function(){det.textContent=g.querySelector('title').textContent;});});
rst.addEventListener('click',function(){zx=0;zw=1;zd=0;layout();});
document.getElementById('search').addEventListener('click',function(){
 var q=prompt('Search frames (regular expression), empty to clear','');
 if(q===null)return;var re=null;try{re=q?new RegExp(q):null;}catch(e){return;}
 var n=0;gs.forEach(function(g){var m=re&&re.test(g.getAttribute('data-l'));
  if(m){g.classList.add('m');n++;}else g.classList.remove('m');});
 det.textContent=re?n+' frames match '+q:' ';});
layout();})();
